"""The kernel cache is trusted only when it is what specx built (issue 33, item 3; CC split, item 8).

A tiny C library stands in for a kernel: compiling it takes a fraction of a second. A "planted" library
has a constructor that writes a marker file when it is loaded: the marker must never appear."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from specx.cpu import build

pytestmark = pytest.mark.skipif(build.c_compiler() is None, reason="no C compiler")

GOOD = "int spx_answer(void) { return 42; }\n"
PLANTED = """#include <stdio.h>
int spx_answer(void) { return 666; }
__attribute__((constructor)) static void planted(void) { FILE *f = fopen("%s", "w"); if (f) fclose(f); }
"""
OPTIONS = ("-O1", "-shared", "-fPIC")
COMPILING = "note: compiling specx's CPU kernels"   # a process's first compile says so (build._announce)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "kernels"
    monkeypatch.setenv("SPECX_KERNEL_CACHE", str(folder))
    return folder


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "answer.c"
    path.write_text(GOOD)
    return path


def compile_planted(tmp_path: Path, marker: Path) -> Path:
    """A library with a constructor, built outside the cache (what an attacker would plant)."""
    src, out = tmp_path / "planted.c", tmp_path / "planted.so"
    src.write_text(PLANTED % marker)
    os.system(f"{build.c_compiler()} -shared -fPIC {src} -o {out}")
    return out


def replace(path: Path, data: bytes) -> None:
    """New bytes at the path as another process would put them (a new file: a loaded one stays mapped)."""
    path.unlink()
    path.write_bytes(data)


def answer(lib) -> int:
    return lib.spx_answer()


def test_a_library_specx_built_loads(cache, source):
    lib, path = build.library("answer", source, build.c_compiler(), OPTIONS)
    assert answer(lib) == 42 and path.parent == cache


def test_a_header_edited_at_any_depth_makes_a_new_build(cache, tmp_path):
    """A build is named by its source and every header it includes with quotes, through other headers too: an
    edited header must not leave the cache serving the library compiled before the edit."""
    (tmp_path / "outer.h").write_text('#include "inner.h"\n')
    (tmp_path / "inner.h").write_text("#define ANSWER 42\n")
    source = tmp_path / "answer.c"
    source.write_text('#include "outer.h"\nint spx_answer(void) { return ANSWER; }\n')
    lib, first = build.library("answer", source, build.c_compiler(), OPTIONS)
    assert answer(lib) == 42
    (tmp_path / "inner.h").write_text("#define ANSWER 43\n")
    lib, second = build.library("answer", source, build.c_compiler(), OPTIONS)
    assert second != first and answer(lib) == 43


def test_every_kernel_header_is_in_a_builds_hash():
    """Each header beside the kernels' C sources is found by build.headers from one of them (a header included
    some other way would not change the build's name when edited)."""
    folder = Path(build.__file__).parent
    found = {p.name for source in folder.glob("*.c") for p in build.headers(source)}
    assert found == {p.name for p in folder.glob("*.h")}


def test_a_planted_library_at_the_cache_path_is_never_loaded(cache, source, tmp_path, capfd):
    """A .so placed where the build would be (no build record, or another's): its constructor never runs;
    specx deletes it, builds its own and says so in one sentence (was: loaded, constructor run)."""
    marker = tmp_path / "constructor-ran"
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    replace(path, compile_planted(tmp_path, marker).read_bytes())
    again = build.build("answer", source, build.c_compiler(), OPTIONS)
    assert again == path and answer(build.load(again)) == 42 and not marker.exists()
    err = [line for line in capfd.readouterr().err.splitlines() if not line.startswith(COMPILING)]
    assert len(err) == 1 and "rebuilt" in err[0] and path.name in err[0]


def test_a_process_says_once_that_it_compiles_kernels(cache, source, tmp_path, capfd, monkeypatch):
    """A first run waits while the kernels compile (up to a minute): the first compile of a process says so in
    one line naming the cache, later compiles and cached builds say nothing."""
    monkeypatch.setattr(build, "_state", {})
    other = tmp_path / "other.c"
    other.write_text(GOOD.replace("42", "43"))
    build.build("answer", source, build.c_compiler(), OPTIONS)
    build.build("other", other, build.c_compiler(), OPTIONS)
    build.build("answer", source, build.c_compiler(), OPTIONS)
    err = capfd.readouterr().err
    assert err.count(COMPILING) == 1 and err.count("\n") == 1 and str(cache) in err


def test_a_garbage_file_is_deleted_and_rebuilt_once(cache, source, capfd):
    """A truncated or garbage library ("file too short") does not turn the kernel off for good."""
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    replace(path, b"\x7fELF garbage")
    assert answer(build.load(build.build("answer", source, build.c_compiler(), OPTIONS))) == 42
    assert "rebuilt" in capfd.readouterr().err


def test_a_library_that_does_not_load_is_rebuilt_once(cache, source, capfd, monkeypatch):
    """A load failure after the hash matched (e.g. a damaged record and file alike): delete, rebuild once, say so."""
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    data = path.read_bytes()
    replace(path, b"junk")
    build._record(path)                 # a record that matches the junk
    lib, _ = build.library("answer", source, build.c_compiler(), OPTIONS)
    assert answer(lib) == 42 and path.read_bytes() == data
    assert "rebuilt" in capfd.readouterr().err


def test_load_checks_the_build_record(cache, source, tmp_path):
    """build.load itself refuses a file whose hash is not the one recorded at build time."""
    marker = tmp_path / "constructor-ran"
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    replace(path, compile_planted(tmp_path, marker).read_bytes())
    with pytest.raises(OSError, match="build"):
        build.load(path)
    assert not marker.exists()


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_cache_writable_by_others_is_refused(cache, source, tmp_path, what):
    """A kernel folder or file that other users may write: refused before anything is loaded."""
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    (cache if what == "folder" else path).chmod(0o777 if what == "folder" else 0o666)
    with pytest.raises(build.Untrusted, match="writable"):
        build.load(path)
    with pytest.raises(build.Untrusted):
        build.library("answer", source, build.c_compiler(), OPTIONS)


def test_a_cache_owned_by_another_user_is_refused(cache, source, monkeypatch):
    """Files and folders not owned by the user running specx are refused (here: specx runs as another uid)."""
    path = build.build("answer", source, build.c_compiler(), OPTIONS)
    monkeypatch.setattr(build.os, "geteuid", lambda: os.stat(path).st_uid + 1)
    with pytest.raises(build.Untrusted, match="owned"):
        build.load(path)


def test_cc_with_a_wrapper_is_split_like_a_shell_would(cache, source, monkeypatch):
    """CC="ccache gcc" (here `env gcc`): the first word is the program, the rest its arguments (was: no
    compiler found, the kernel off)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    monkeypatch.setenv("CC", f"env {gcc}")
    assert build.c_compiler() == f"env {gcc}"
    lib, _ = build.library("answer", source, build.c_compiler(), OPTIONS)
    assert answer(lib) == 42


def test_rowgemm_comes_back_after_a_garbage_file(cache):
    """The reported case, across processes as it happens: a garbage rowgemm library in the cache used to
    turn that build off for good ("file too short"; on an AVX-512 machine the AVX2 build stood in); the
    next process now rebuilds it and says so."""
    import subprocess
    import sys

    from cli_helpers import ROOT, specx_env

    probe = "from specx.cpu import rowgemm; print(rowgemm.available(), rowgemm.build_id(), rowgemm.why_not())"
    env = specx_env(SPECX_KERNEL_CACHE=str(cache), SPECX_ROWGEMM_PREFETCH="0")

    def run():
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split(" ", 2), proc.stderr

    (available, build_id, why), _ = run()
    if available != "True":
        pytest.skip(f"rowgemm not built here: {why}")
    replace(cache / f"rowgemm-{build_id}.so", b"garbage")
    (available, again, why), err = run()
    assert (available, again) == ("True", build_id), why   # the same build (not the AVX2 fallback, nor none)
    assert "rebuilt" in err
