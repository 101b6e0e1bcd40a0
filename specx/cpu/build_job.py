"""One kernel build's compiler processes (cpu/build.py decides what to build and where): its units started at once
and linked, or the source alone; the library's sha256 recorded beside it, then the file renamed into place, so that
a concurrent first run never loads a half-written library."""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .build import Spec

RECORD = ".sha256"          # beside each library: the sha256 of the file as built
LIBRARY_MODE = 0o644        # a built library: nobody else may write it
COMPILE_TIMEOUT = 300       # seconds one compiler process may take (the largest unit takes about 8 s alone)


class _Compile:
    """One build's compiler processes, started at once: its units (then linked), or the source alone. finish()
    waits for them, records the library's hash and renames it into place; the temporary files never stay."""

    def __init__(self, spec: Spec, path: Path):
        self.spec, self.path = spec, path
        self.command = [*shlex.split(spec.compiler), *spec.options]
        self.library = self._temp(".so")
        self.objects: list[str] = []
        self.running: list[subprocess.Popen] = []
        try:
            if spec.units > 1:
                self.objects = [self._temp(f".{u}.o") for u in range(spec.units)]
                for u, obj in enumerate(self.objects):
                    self._start(f"-DSPX_UNIT={u}", "-c", str(spec.source), "-o", obj)
            else:
                self._start(str(spec.source), "-o", self.library)
        except BaseException:
            self.clean()
            raise

    def finish(self) -> None:
        try:
            for process in list(self.running):
                _wait(process)
            if self.objects:
                _wait(self._start(*self.objects, "-o", self.library))
            os.chmod(self.library, LIBRARY_MODE)   # the linker creates it under the umask, which may let a group write
            _record(Path(self.library), self.path)
            os.replace(self.library, self.path)
        finally:
            self.clean()

    def _start(self, *arguments: str) -> subprocess.Popen:
        process = subprocess.Popen([*self.command, *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
        self.running.append(process)   # clean() stops it if it still runs
        return process

    def _temp(self, suffix: str) -> str:
        fd, name = tempfile.mkstemp(prefix=f".{self.path.stem}-", suffix=suffix, dir=self.path.parent)
        os.close(fd)
        return name

    def clean(self) -> None:
        """Stop what still runs (an error elsewhere, an interrupt) and delete the temporary files."""
        for process in self.running:
            if process.poll() is None:
                process.kill()
                process.wait()
        for temp in (self.library, *self.objects):
            if os.path.exists(temp):
                os.unlink(temp)


def _wait(process: subprocess.Popen) -> None:
    """Wait for a compiler process; OSError with its message when it fails."""
    try:
        _, errors = process.communicate(timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    if process.returncode:
        raise OSError(errors.strip() or f"{process.args[0]} exited with {process.returncode}")


def _record(built: Path, path: Path | None = None) -> None:
    """Write the build record of `path` (default: `built` itself) from the bytes of `built`."""
    from ..state.atomicio import atomic_write

    path = path or built
    atomic_write(path.with_name(path.name + RECORD), _sha256(built) + "\n")


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
