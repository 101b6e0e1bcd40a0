"""This machine, named once: what tuned settings, measured costs and kernel timings are keyed by, and the
instruction sets that decide which kernels can run."""
from __future__ import annotations

from pathlib import Path

CPU_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile",
             "amx_bf16", "fma", "f16c")   # the speed-relevant ones `specx env` and bench results list


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_name(cpuinfo: str | None = None) -> str:
    """The processor's model name (/proc/cpuinfo), or "unknown cpu"."""
    for line in (_cpuinfo() if cpuinfo is None else cpuinfo).splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown cpu"


def cpu_flags(cpuinfo: str | None = None) -> dict[str, bool]:
    """Speed-relevant instruction sets, from /proc/cpuinfo."""
    text = _cpuinfo() if cpuinfo is None else cpuinfo
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return {f: f in flags for f in CPU_FLAGS}


def identity(device: str = "cpu") -> str:
    """The processor, the vector instructions PyTorch uses on it and the thread count (CPU), or the
    GPU's name: measured speeds are per machine. Two machines both named "AMD EPYC" by /proc/cpuinfo,
    one with AVX2 and one with AVX-512, ran fp16's kernels 1.2–1.8× apart, in opposite orders.
    Tuned settings, measured costs and kernel timings all key by this one string."""
    import torch

    if device.startswith("cuda"):
        return f"{device}: {torch.cuda.get_device_name(device)}"
    return f"cpu: {cpu_name()} ({torch.backends.cpu.get_cpu_capability()}), {torch.get_num_threads()} threads"
