"""Compile a kernel's C source once per machine into the kernel cache, and load it.

Shared by every native kernel (cpu/rowgemm.c, cpu/quant.c). A build is named by a hash of its
source, flags and compiler version, written under a temporary name and renamed into place, so
concurrent first runs never load a half-written library.

Loading a library runs its code, and a wrong kernel would silently break the lossless guarantee, so a
library is loaded only when it is what specx built: the cache folder and the file belong to the user
and nobody else may write them (Untrusted otherwise), and the file's sha256 is the one recorded beside
it when it was built. A file that fails that check, or fails to load, is deleted and built again once,
and one sentence on stderr says so."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

RECORD = ".sha256"          # beside each library: the sha256 of the file as built
PRIVATE = 0o700             # the cache folder as specx creates it
LIBRARY_MODE = 0o644        # a built library: nobody else may write it
_state: dict = {}           # announced: this process has said that it compiles kernels (_announce)


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


def build(name: str, source: Path, compiler: str, options: tuple[str, ...]) -> Path:
    """The shared library for (source, options, compiler) in the kernel cache, compiling it if missing or
    if the file there is not the one recorded at build time."""
    from ..state.atomicio import locked

    command = shlex.split(compiler)
    version = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=30).stdout
    key = hashlib.sha256(source.read_bytes() + " ".join(options).encode() + version.encode()).hexdigest()[:16]
    folder = _folder()
    path = folder / f"{name}-{key}.so"
    with locked(folder / f".{name}.lock"):   # one compiler per build at a time; the others wait, then find it
        problem = _mismatch(path) if os.path.lexists(path) else None
        if problem == "":
            return path
        if problem:
            _discard(path)
        _announce(folder)
        _compile(command, source, options, path)
    if problem:
        _say(f"note: the kernel {path.name} in {folder} {problem}: deleted it and rebuilt it")
    return path


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


def _compile(command: list[str], source: Path, options: tuple[str, ...], path: Path) -> None:
    """Compile to a temporary file, record its hash, then rename it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".so", dir=path.parent)
    os.close(fd)
    try:
        done = subprocess.run([*command, *options, str(source), "-o", tmp], capture_output=True, text=True,
                              timeout=300)
        if done.returncode:
            raise OSError(done.stderr.strip() or f"{command[0]} exited with {done.returncode}")
        os.chmod(tmp, LIBRARY_MODE)   # the linker creates it under the umask, which may let a group write
        _record(Path(tmp), path)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _record(built: Path, path: Path | None = None) -> None:
    """Write the build record of `path` (default: `built` itself) from the bytes of `built`."""
    from ..state.atomicio import atomic_write

    path = path or built
    atomic_write(path.with_name(path.name + RECORD), _sha256(built) + "\n")


def _discard(path: Path) -> None:
    for stale in (path, path.with_name(path.name + RECORD)):
        Path(stale).unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _last_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[-1] if lines else type(e).__name__


def _announce(folder: Path) -> None:
    """Say, before a process's first compile, why a first run waits: the kernels took 40-48 s to compile on a Zen 4
    dev CPU with gcc 12, 32-36 s of them the AVX-512 build of quant.c (its AVX2 build, which AVX2-only CPUs take:
    44-47 s), benchmarks/results/2026-11-29-first-run."""
    if not _state.get("announced"):
        _state["announced"] = True
        _say(f"note: compiling specx's CPU kernels for this machine, once: about a minute (they are kept in {folder})")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
