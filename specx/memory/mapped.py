"""Weights that stay memory-mapped: what of them a run makes resident.

transformers maps a safetensors file and, when the file already holds the load dtype, keeps the
tensors pointing into the mapping. specx's float32 CPU path (rowgemm) computes on those tensors
without copying them, so a page of weights costs memory only once something reads it. Every linear
layer is read on every forward, but an untied input embedding is only looked up: a run makes
resident the rows of the tokens it sees, plus the cached file pages the kernel maps around each fault
(Linux's fault-around, 64 KiB by default). The plan counts that, not the whole table: for the
fixture Qwen pair it is the difference between 9.5 GB planned and 8.2 GB measured at 512 tokens.
Those pages are clean file pages, so under pressure the kernel drops them rather than failing.
specx's lean decoder does not map its lookup table at all: it reads the rows (read_by_rows).
"""
from __future__ import annotations

PAGE = 4096
FAULT_AROUND = 64 * 2**10
CONVERTED = "converted"     # Shape.file_dtype of a GGUF: specx writes its copy in the load dtype


def read_by_rows(shape, quant: str, on_cpu: bool) -> bool:
    """Whether this model's untied input embedding is read from the file by rows (specx's lean decoder:
    decoder/filerows.py), so that it takes no resident memory at all."""
    from .footprint import is_native

    return on_cpu and not shape.tied and is_native(quant)


def stays_mapped(shape, dtype: str, quant: str, on_cpu: bool) -> bool:
    """Whether this model's untied input embedding stays a view of the weight file when loaded."""
    if not on_cpu or shape.tied or dtype != "float32" or quant != "none":
        return False
    if shape.file_dtype not in (CONVERTED, "float32"):   # unknown, or converted while loading: a copy
        return False
    from ..cpu.fastpath import prepacks

    return not prepacks()


def resident_embedding(shape, full: int, tokens: int) -> int:
    """Bytes of a mapped embedding of `full` bytes a run of `tokens` tokens can make resident: per distinct
    token its float32 row (in whole pages) and the fault-around window, at most the
    whole table."""
    row = -(-(shape.hidden * 4) // PAGE) * PAGE
    return min(full, tokens * (row + FAULT_AROUND))


def file_dtype(source, config) -> str:
    """The dtype the weight files hold: CONVERTED for a GGUF (specx's copy is in the load dtype), the
    config's dtype for a folder of safetensors, '' when unknown (then nothing is assumed mapped)."""
    if source.kind != "hf":
        return CONVERTED
    if not any(source.path.glob("*.safetensors")):
        return ""
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    return str(dtype).removeprefix("torch.") if dtype else ""
