"""Compile a kernel's C source once per machine into the kernel cache, and load it.

Shared by every native kernel (kernels/rowgemm.c, cpu/quant.c). A build is named by a hash of its
source, flags and compiler version, written under a temporary name and renamed into place, so
concurrent first runs never load a half-written library."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def c_compiler() -> str | None:
    """$CC, else cc, else gcc: the first that exists."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    return compiler if compiler and shutil.which(compiler) else None


def build(name: str, source: Path, compiler: str, options: tuple[str, ...]) -> Path:
    """The shared library for (source, options, compiler) in the kernel cache, compiling it if missing."""
    from ..runtime.paths import kernel_cache

    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    key = hashlib.sha256(source.read_bytes() + " ".join(options).encode() + version.encode()).hexdigest()[:16]
    folder = kernel_cache()
    path = folder / f"{name}-{key}.so"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=folder)
    os.close(fd)
    try:
        done = subprocess.run([compiler, *options, str(source), "-o", tmp], capture_output=True, text=True,
                              timeout=300)
        if done.returncode:
            raise OSError(done.stderr.strip() or f"{compiler} exited with {done.returncode}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load(path: Path) -> ctypes.CDLL:
    """Open a built library."""
    return ctypes.CDLL(str(path))
