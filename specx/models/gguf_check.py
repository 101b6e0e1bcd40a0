"""A fast, bounded check of a GGUF file's header before transformers touches it."""
from __future__ import annotations

from math import prod
from pathlib import Path

from ..errors import DAMAGED_GGUF, ModelFileError

# names gguf.GGUFReader gives its own header fields: a file using one as a key fails in that reader
_RESERVED = ("GGUF.version", "GGUF.tensor_count", "GGUF.kv_count")

# The parse is specx.decoder.gguf_header's, through gguf_file.open_gguf (bounded: every count and size
# is checked against the bytes left before it is used); this adds what transformers' loaders need on
# top: every tensor of a type the gguf package knows, an architecture, and keys gguf.GGUFReader accepts.


def scan_gguf(path: Path) -> dict:
    """Check a GGUF file; return its scalar and string metadata (arrays as None) and its tensors as
    (name, n_elements). Every failure is a SpecxError."""
    from ..decoder.gguf_file import known_type, open_gguf, type_name

    with open_gguf(path) as gguf:
        meta, tensors = gguf.meta, gguf.tensors
        problem = next((f"tensor {name!r} has {type_name(info.type)}, a type the gguf package does not know"
                        for name, info in tensors.items() if not known_type(info.type)), None)
        if any(key in meta for key in _RESERVED):
            problem = f"it uses a reserved metadata key ({', '.join(k for k in _RESERVED if k in meta)})"
        if not tensors or not isinstance(meta.get("general.architecture"), str):
            problem = "it has no tensors or no general.architecture (a vocabulary-only file?)"
        if problem:
            raise ModelFileError(f"{path} is not a readable GGUF file: {problem}", hint=DAMAGED_GGUF)
        return {"meta": {k: v if isinstance(v, (int, float, str)) else None for k, v in meta.items()},
                "tensors": [(name, prod(info.shape)) for name, info in tensors.items()]}


def check_gguf(path: Path) -> None:
    """Validate a GGUF file quickly, before transformers touches it."""
    scan_gguf(path)
