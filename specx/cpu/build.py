"""Compile a kernel's C source once per machine into the kernel cache, and load it.

Shared by every native kernel (cpu/rowgemm.c, cpu/quant.c). A build is named by a hash of its
source, the headers it includes (`#include "..."`, at any depth), flags and compiler version,
written under a temporary name and renamed into place, so concurrent first runs never load a
half-written library.

Loading a library runs its code, and a wrong kernel would silently break the lossless guarantee, so a
library is loaded only when it is what specx built: the cache folder and the file belong to the user
and nobody else may write them (Untrusted otherwise), and the file's sha256 is the one recorded beside
it when it was built. A file that fails that check, or fails to load, is deleted and built again once,
and one sentence on stderr says so.

A source may be compiled as several units (`units`: the compiler runs on each at once with -DSPX_UNIT=u, and
the objects are linked), since a machine's first run waits for the compile (benchmarks/results/2026-11-30-units)."""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from .build_job import RECORD, _Compile, _record, _sha256  # noqa: F401 (_record: tests write records through build)

PRIVATE = 0o700             # the cache folder as specx creates it
_state: dict = {}           # announced: this process has said that it compiles kernels (_announce); versions


class Untrusted(OSError):
    """A kernel cache folder or file that someone else owns or may write: nothing is loaded from it."""


def c_compiler() -> str | None:
    """$CC (split as a shell would: `ccache gcc` runs gcc through ccache), else cc, else gcc: the first
    that exists."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    try:
        program = shlex.split(compiler)[0] if compiler else None
    except (ValueError, IndexError):
        return None
    return compiler if program and shutil.which(program) else None


@dataclass(frozen=True)
class Spec:
    """One build: a C source compiled with these options by this compiler, as `units` units (-DSPX_UNIT=u, compiled
    at once, then linked) when more than 1."""

    name: str
    source: Path
    compiler: str
    options: tuple[str, ...]
    units: int = 1


def build(name: str, source: Path, compiler: str, options: tuple[str, ...], units: int = 1) -> Path:
    """The shared library for (source, options, compiler) in the kernel cache (build_spec)."""
    return build_spec(Spec(name, source, compiler, tuple(options), units))


def build_spec(spec: Spec) -> Path:
    """The library of `spec` in the kernel cache, compiling it if missing or if the file there is not the one
    recorded at build time."""
    from ..state.atomicio import locked

    path, folder = _path(spec), _folder()
    with locked(folder / f".{spec.name}.lock"):   # one compiler per build at a time; the others wait, then find it
        problem = _mismatch(path) if os.path.lexists(path) else None
        if problem == "":
            return path
        if problem:
            _discard(path)
        _announce(folder)
        _Compile(spec, path).finish()
    if problem:
        _say(f"note: the kernel {path.name} in {folder} {problem}: deleted it and rebuilt it")
    return path


def build_ahead(specs: list[Spec]) -> None:
    """Compile those of `specs` the kernel cache lacks, all at once (a machine's first run waits for the compiler,
    and one library after another leaves cores idle). A failure is left to the build() that asks for it later,
    which reports it or falls back."""
    from ..state.atomicio import locked

    missing = [(spec, path) for spec in specs if not os.path.lexists(path := _path(spec))]
    if not missing:
        return
    folder = _folder()
    with ExitStack() as held:
        for name in sorted({spec.name for spec, _ in missing}):   # one order: no two processes wait on each other
            held.enter_context(locked(folder / f".{name}.lock"))
        missing = [(spec, path) for spec, path in missing if not os.path.lexists(path)]   # built meanwhile
        if missing:
            _announce(folder)
        jobs = []
        for spec, path in missing:
            try:
                jobs.append(_Compile(spec, path))
            except (OSError, subprocess.SubprocessError):
                continue
            held.callback(jobs[-1].clean)   # an error or an interrupt stops every job still running
        for job in jobs:
            try:
                job.finish()
            except (OSError, subprocess.SubprocessError):
                pass


def _path(spec: Spec) -> Path:
    """Where the build lives: named by a hash of its source, its headers, options, units and compiler version."""
    units = f" units={spec.units}" if spec.units > 1 else ""
    text = b"".join(p.read_bytes() for p in [spec.source, *headers(spec.source)])
    text += (" ".join(spec.options) + units).encode() + _version(spec.compiler).encode()
    return _folder() / f"{spec.name}-{hashlib.sha256(text).hexdigest()[:16]}.so"


def headers(source: Path) -> list[Path]:
    """The headers `source` includes with quotes, directly or through another, in the order first met: a changed
    header must make a new build, or the cache would keep serving the one compiled before the change."""
    found: list[Path] = []
    todo = [source]
    while todo:
        for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', todo.pop(0).read_text(), re.MULTILINE):
            path = source.parent / name
            if path not in found:
                found.append(path)
                todo.append(path)
    return found


def _version(compiler: str) -> str:
    """The compiler's --version text (asked once a process)."""
    versions = _state.setdefault("versions", {})
    if compiler not in versions:
        versions[compiler] = subprocess.run([*shlex.split(compiler), "--version"], check=False, capture_output=True,
                                            text=True, timeout=30).stdout
    return versions[compiler]


def load(path: Path) -> ctypes.CDLL:
    """Open a built library, once its folder and file are the user's alone and its hash is the recorded one."""
    path = Path(path)
    _check_owner(path.parent, follow=True)
    problem = _mismatch(path)
    if problem:
        raise OSError(f"the kernel {path.name} {problem}")
    return ctypes.CDLL(str(path))


def library(name: str, source: Path, compiler: str, options: tuple[str, ...]) -> tuple[ctypes.CDLL, Path]:
    """build() then load(); a library that still fails to load is deleted and built again, once."""
    path = build(name, source, compiler, options)
    try:
        return load(path), path
    except Untrusted:
        raise
    except OSError as e:
        _discard(path)
        why = _last_line(e)
    path = build(name, source, compiler, options)
    lib = load(path)
    _say(f"note: the kernel {path.name} did not load ({why}): deleted it and rebuilt it")
    return lib, path


def _folder() -> Path:
    """The kernel cache, created private; refused when another user owns it or may write it."""
    from ..state.paths import kernel_cache

    folder = kernel_cache()
    folder.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
    _check_owner(folder, follow=True)
    return folder


def _check_owner(path: Path, follow: bool = False) -> None:
    st = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise Untrusted(f"{path} is a symbolic link: specx loads only the kernels it built")
    if st.st_uid != os.geteuid():
        raise Untrusted(f"{path} is owned by another user (uid {st.st_uid}): specx loads no kernel from it "
                        "(set SPECX_KERNEL_CACHE to a folder of yours)")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Untrusted(f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}): specx loads "
                        f"no kernel from it (run `chmod go-w {path}`)")


def _mismatch(path: Path) -> str:
    """Why the file at `path` is not the library specx built there ("" when it is)."""
    _check_owner(path)
    record = path.with_name(path.name + RECORD)
    try:
        _check_owner(record)
        recorded = record.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return "has no build record"
    except (OSError, UnicodeDecodeError):
        return "has an unreadable build record"
    if _sha256(path) != recorded:
        return "is not the file that was built (its sha256 differs from the build record)"
    return ""


def _discard(path: Path) -> None:
    for stale in (path, path.with_name(path.name + RECORD)):
        Path(stale).unlink(missing_ok=True)


def _last_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[-1] if lines else type(e).__name__


def _announce(folder: Path) -> None:
    """Say, before a process's first compile, why a first run waits: 24-26 s for the kernels a GGUF run loads on the
    2-core Zen 4 dev CPU with gcc 12 (benchmarks/results/2026-11-30-units)."""
    if not _state.get("announced"):
        _state["announced"] = True
        _say(f"note: compiling specx's CPU kernels for this machine, once: about 25 s on 2 cores "
             f"(they are kept in {folder})")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
