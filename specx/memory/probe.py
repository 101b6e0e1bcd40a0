"""What memory this process can use: CUDA devices, CPU memory under cgroup limits, disk at the offload folder.

The parsers are pure functions over file contents (tested on samples); `detect()` reads the real files.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_NO_LIMIT = 1 << 60   # cgroup v1 writes 2^63-ish for "unlimited"
BUDGET_KEYS = ("gpu", "cpu", "disk")


@dataclass(frozen=True)
class Budgets:
    """Bytes the plan may use per device kind; gpu None = no CUDA device. `source` says where they came from."""

    gpu: int | None
    cpu: int
    disk: int
    source: str = "detected"
    gpu_name: str = ""

    def describe(self) -> str:
        gpu = "no gpu" if self.gpu is None else f"gpu {fmt_bytes(self.gpu)}"
        return f"{gpu}, cpu {fmt_bytes(self.cpu)}, disk {fmt_bytes(self.disk)} ({self.source})"


def fmt_bytes(n: float) -> str:
    """Binary units, one decimal: 1.5 GiB, 300.0 MiB."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def parse_size(text: str) -> int:
    """'6GiB', '16G' (binary), '500MB' (decimal), '1.5 GiB', '0' → bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise UsageError(f"cannot read the size {text!r}", "write sizes like 6GiB, 16G, 500MB or 0")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_mem_budget(text: str) -> dict[str, int]:
    """'gpu=6GiB,cpu=16GiB[,disk=100GB]' → {'gpu': …, 'cpu': …}; gpu=0 plans without a GPU."""
    import difflib

    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq:
            raise UsageError(f"--mem-budget part {part!r} has no '='", "write it as gpu=6GiB,cpu=16GiB")
        if key not in BUDGET_KEYS:
            close = difflib.get_close_matches(key, BUDGET_KEYS, n=1)
            raise UsageError(f"unknown --mem-budget device {key!r}" + (f" (did you mean {close[0]}?)" if close else ""),
                             "the devices are gpu, cpu and disk")
        out[key] = parse_size(value)
    if not out:
        raise UsageError("--mem-budget is empty", "write it as gpu=6GiB,cpu=16GiB")
    return out


# ---- CPU memory ------------------------------------------------------------------------------

def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo → {'MemTotal': bytes, 'MemAvailable': bytes, …}."""
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[key.strip()] = int(fields[0]) * (1024 if fields[1:2] == ["kB"] else 1)
    return out


def parse_limit(text: str | None) -> int | None:
    """A cgroup limit file ('max', a huge v1 number, or bytes) → bytes, or None when unlimited/absent."""
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit() or int(text) >= _NO_LIMIT:
        return None
    return int(text)


def parse_stat(text: str | None) -> dict[str, int]:
    """memory.stat → {name: value}."""
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def cgroup_headroom(limit: str | None, usage: str | None, stat: str | None) -> int | None:
    """Bytes still usable under a cgroup limit: limit − usage + reclaimable page cache; None without a limit."""
    cap = parse_limit(limit)
    if cap is None:
        return None
    used = int(usage.strip()) if usage and usage.strip().isdigit() else 0
    st = parse_stat(stat)
    reclaimable = st.get("inactive_file", st.get("total_inactive_file", 0))
    return max(0, cap - max(0, used - reclaimable))


def cgroup_dirs(proc_self_cgroup: str, root: str = "/sys/fs/cgroup") -> list[tuple[str, Path]]:
    """Candidate (version, folder) pairs for this process's memory cgroup, own path first, then the root."""
    out: list[tuple[str, Path]] = []
    for line in proc_self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":                                  # v2 unified hierarchy
            out += [("v2", Path(root) / rel.lstrip("/")), ("v2", Path(root))]
        elif "memory" in controllers.split(","):               # v1 memory controller
            out += [("v1", Path(root) / "memory" / rel.lstrip("/")), ("v1", Path(root) / "memory")]
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def cpu_available(meminfo: str | None = None, proc_self_cgroup: str | None = None,
                  root: str = "/sys/fs/cgroup") -> tuple[int, str]:
    """Bytes of CPU memory this process can still use, and which limit decided it."""
    info = parse_meminfo(meminfo if meminfo is not None else _read(Path("/proc/meminfo")) or "")
    best, why = info.get("MemAvailable", info.get("MemTotal", 0)), "MemAvailable"
    names = {"v2": ("memory.max", "memory.current", "memory.stat"),
             "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat")}
    text = proc_self_cgroup if proc_self_cgroup is not None else _read(Path("/proc/self/cgroup")) or ""
    for version, folder in cgroup_dirs(text, root):
        limit, usage, stat = (_read(folder / n) for n in names[version])
        room = cgroup_headroom(limit, usage, stat)
        if room is not None:
            if room < best:
                best, why = room, f"cgroup {version} limit {fmt_bytes(parse_limit(limit))}"
            break
    return best, why


# ---- CUDA and disk ---------------------------------------------------------------------------

def cuda_free() -> tuple[int, str] | None:
    """(free bytes, name) of cuda:0, or None without CUDA. Only cuda:0 is planned for."""
    import torch

    if not torch.cuda.is_available():
        return None
    free, _total = torch.cuda.mem_get_info(0)
    return int(free), torch.cuda.get_device_name(0)


def disk_free(folder: Path) -> int:
    """Free bytes on the file system that holds `folder` (its nearest existing parent)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def offload_folder() -> Path:
    from ..state.paths import model_cache

    return Path(os.environ.get("SPECX_OFFLOAD_DIR") or model_cache() / "offload")


def detect(override: dict[str, int] | None = None) -> Budgets:
    """The machine's budgets, each replaced by `override` (from --mem-budget) where given."""
    override = override or {}
    gpu = name = None
    if "gpu" in override:
        gpu, name = (override["gpu"] or None), "simulated"
    else:
        found = cuda_free()
        gpu, name = found if found else (None, "")
    cpu = override["cpu"] if "cpu" in override else cpu_available()[0]
    disk = override["disk"] if "disk" in override else disk_free(offload_folder())
    source = "from --mem-budget" if override else "detected"
    if override and len(override) < 3:
        source = f"{', '.join(sorted(override))} from --mem-budget, the rest detected"
    return Budgets(gpu, cpu, disk, source, name or "")


def parse_hwm(status: str) -> int | None:
    """Bytes of `VmHWM` in a /proc/<pid>/status text, None when absent."""
    match = re.search(r"^VmHWM:\s+(\d+)\s+kB", status, re.M)
    return int(match.group(1)) * 1024 if match else None


def peak_rss_bytes() -> int:
    """This process's peak resident memory. Linux's `VmHWM` is reset by exec, whereas `ru_maxrss` is not:
    a process started from a large one (a test runner, a shell script under a big parent) would otherwise
    report its parent's peak. Elsewhere `ru_maxrss` (kB on Linux, bytes on macOS)."""
    try:
        hwm = parse_hwm(Path("/proc/self/status").read_text())
    except OSError:
        hwm = None
    if hwm is not None:
        return hwm
    import resource
    import sys
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def release_freed_heap() -> None:
    """Give the heap pages this process has freed back to the system (glibc's malloc_trim; elsewhere nothing).
    Loading frees much of what it allocates (a GGUF tokenizer's conversion above all: 130 MB for Gemma-3-270M's
    262,144 entries), and glibc keeps such pages resident, so a run's KV cache and buffers grew the peak RSS up to
    190 MB past what the memory plan counts (benchmarks/results/2026-11-27-attention-tiles)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):   # no malloc_trim (not glibc), or no process handle (Windows)
        return
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
