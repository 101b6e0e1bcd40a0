"""Weight storage schemes the planner may choose, per device; CPU backends register themselves here.

A backend is priced per parameter: `weight_bytes` for the weights of linear layers inside decoder
layers (what weight-only quantization converts), `other_dtype` for everything else.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .footprint import FOUR_BIT, Scheme


@dataclass(frozen=True)
class Backend:
    """A named way to hold weights on a device, with its price and an availability check."""

    name: str
    device: str                       # "cpu" | "cuda"
    weight_bytes: float
    other_dtype: str
    row_bytes: int = 0
    lossy: bool = False               # changes the target's weights (the output is the quantized target's own)
    note: str = ""
    available: Callable[[], bool] = field(default=lambda: True, compare=False, repr=False)

    def scheme(self) -> Scheme:
        return Scheme(self.name, self.weight_bytes, self.other_dtype, self.row_bytes, self.device, self.lossy)


_REGISTRY: dict[tuple[str, str], Backend] = {}


def register_backend(name: str, device: str, weight_bytes: float, *, other_dtype: str = "float32",
                     row_bytes: int = 0, lossy: bool = True, note: str = "",
                     available: Callable[[], bool] = lambda: True) -> Backend:
    """Make a weight backend known to the planner (e.g. a CPU int8/int4 weight-only path)."""
    backend = Backend(name, device, weight_bytes, other_dtype, row_bytes, lossy, note, available)
    _REGISTRY[(device, name)] = backend
    return backend


def backends(device: str, only_available: bool = True) -> list[Backend]:
    """The backends of a device, most bytes (most faithful) first."""
    found = [b for (d, _), b in _REGISTRY.items() if d == device and (not only_available or _ok(b))]
    return sorted(found, key=lambda b: -b.weight_bytes)


def backend(device: str, name: str) -> Backend | None:
    return _REGISTRY.get((device, name))


def _ok(b: Backend) -> bool:
    try:
        return bool(b.available())
    except Exception:  # noqa: BLE001  (a broken check means "not available", never a crash)
        return False


def _bnb_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("bitsandbytes") is not None


register_backend("float32", "cpu", 4, other_dtype="float32", lossy=False,
                 note="the reference precision, with specx's float32 fast path")
register_backend("bfloat16", "cpu", 2, other_dtype="bfloat16", lossy=False,
                 note="half the memory; fast only where the CPU has AVX-512 BF16 or AMX")
register_backend("bfloat16", "cuda", 2, other_dtype="bfloat16", lossy=False, note="the GPU's native precision")
register_backend("float16", "cuda", 2, other_dtype="float16", lossy=False, note="for GPUs without bfloat16")
register_backend("int8", "cuda", 1, other_dtype="bfloat16", row_bytes=4, available=_bnb_available,
                 note="bitsandbytes LLM.int8 (one fp32 scale per row)")
register_backend("nf4", "cuda", FOUR_BIT, other_dtype="bfloat16", available=_bnb_available,
                 note="bitsandbytes 4-bit NormalFloat, double-quantized blocks of 64")
register_backend("fp4", "cuda", FOUR_BIT, other_dtype="bfloat16", available=_bnb_available,
                 note="bitsandbytes 4-bit float, double-quantized blocks of 64")


def _cpu_kernel(name: str) -> Callable[[], bool]:
    def available() -> bool:
        from ..cpu.fastpath import usable   # specx's CPU weight-only kernels (cpu/qlinear.py)

        return usable(name)
    return available


# specx's own CPU weight-only layers: activations stay float32 around them (cpu/qlinear.py).
register_backend("fp16", "cpu", 2, other_dtype="float32", available=_cpu_kernel("fp16"),
                 note="fp16 weights prepacked for fbgemm; measured the fastest CPU verification on AVX2")
register_backend("int8", "cpu", 1, other_dtype="float32", row_bytes=2, available=_cpu_kernel("int8"),
                 note="int8 weights per channel (bf16 scale), matmul in bf16")
register_backend("int4", "cpu", 0.625, other_dtype="float32", available=_cpu_kernel("int4"),
                 note="int4 weights in groups of 32 (bf16 scale and zero), matmul in bf16")
