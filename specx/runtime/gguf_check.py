"""A fast, bounded check of a GGUF file's header before transformers touches it."""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from .errors import ModelFileError, ModelUnavailable

_DAMAGED = "the file is damaged or not a GGUF model: download it again"

# A bounded struct walk rather than gguf.GGUFReader, which builds a numpy view per vocabulary string
# (3 s for SmolLM2, 9-13 s for Qwen/Gemma here) and loops per element over a bogus array length.
# It follows the reader's rules (tests check that what passes here parses there), and checks every
# count against the bytes left before looping over it, so bogus sizes cost neither memory nor time.

class _Bad(Exception):
    """What the header walk found wrong."""


_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Walk:
    """A little-endian cursor over the mapped file (all GGUF files in the wild are little-endian)."""

    def __init__(self, buf):
        self.buf, self.pos = buf, 4

    def need(self, n: int, advance: bool = True) -> int:
        """Check n bytes are left (a bogus size or a cut file fails here), optionally step over them."""
        if n > len(self.buf) - self.pos:
            raise _Bad(f"a size at offset {self.pos} runs past the end of the file (truncated?)")
        start, self.pos = self.pos, self.pos + n * advance
        return start

    def num(self, code: str):
        return struct.unpack_from("<" + code, self.buf, self.need(struct.calcsize(code)))[0]

    def text(self) -> str:
        n = self.num("Q")
        return str(self.buf[self.need(n):self.pos], "utf-8")

    def value(self, vtype: int):
        """Read a metadata value; arrays are stepped over (None), never materialised."""
        if vtype in _SCALAR:
            return self.num(_SCALAR[vtype])
        if vtype == _STRING:
            return self.text()
        if vtype != _ARRAY:
            raise _Bad(f"unknown metadata value type {vtype}")
        itype, count = self.num("I"), self.num("Q")
        if itype in _SCALAR:
            self.need(count * struct.calcsize(_SCALAR[itype]))
            return None
        self.need(count * 8, advance=False)  # a string or array element takes at least 8 bytes
        if itype != _STRING:
            for _ in range(count):
                self.value(itype)
            return None
        buf, pos, end = self.buf, self.pos, len(self.buf)
        for _ in range(count):  # inlined: vocabularies hold 150k+ strings, and this is most of the time
            if end - pos < 8 or (n := struct.unpack_from("<Q", buf, pos)[0]) > end - pos - 8:
                raise _Bad(f"a string at offset {pos} runs past the end of the file (truncated?)")
            str(buf[pos + 8:pos + 8 + n], "utf-8")
            pos += 8 + n
        self.pos = pos
        return None


def _walk(buf) -> dict:
    """Check the layout; return the scalar metadata and the tensors as (name, n_elements)."""
    from gguf.constants import GGML_QUANT_SIZES

    if bytes(buf[:4]) != b"GGUF":
        raise _Bad("it does not start with the GGUF magic bytes")
    w = _Walk(buf)
    if (version := w.num("I")) not in (2, 3):
        raise _Bad(f"GGUF version {version} is not supported (only 2 and 3)")
    n_tensors, n_kv = w.num("Q"), w.num("Q")
    meta = {"GGUF.version": 0, "GGUF.tensor_count": 0, "GGUF.kv_count": 0}  # names GGUFReader reserves
    w.need(n_kv * 13, advance=False)  # a key/value pair takes at least 13 bytes
    for _ in range(n_kv):
        key, vtype = w.text(), w.num("I")
        if key in meta:
            raise _Bad(f"metadata key {key!r} appears twice")
        meta[key] = (vtype, w.value(vtype))
    w.need(n_tensors * 24, advance=False)  # a tensor entry takes at least 24 bytes
    infos = []
    for _ in range(n_tensors):
        name, n_dims = w.text(), w.num("I")
        if n_dims > 4:
            raise _Bad(f"tensor {name!r} has {n_dims} dimensions")
        infos.append((name, [w.num("Q") for _ in range(n_dims)], w.num("I"), w.num("Q")))
    vtype, align = meta.get("general.alignment", (4, 32))
    if vtype != 4 or align <= 0 or align & (align - 1):
        raise _Bad(f"bad general.alignment {align}")
    data_start, names, tensors = -(-w.pos // align) * align, set(), []
    for name, dims, ttype, offset in infos:
        if name in names or ttype not in GGML_QUANT_SIZES:
            raise _Bad(f"tensor {name!r} is duplicated or has an unknown type {ttype}")
        (block, size), n = GGML_QUANT_SIZES[ttype], 1
        for d in dims:
            n *= d
        if dims and dims[0] % block:
            raise _Bad(f"tensor {name!r} has rows that are not a whole number of blocks")
        if data_start + offset + n * size // block > len(buf):
            raise _Bad(f"tensor {name!r} lies past the end of the file (truncated download?)")
        names.add(name)
        tensors.append((name, n))
    if not tensors or meta.get("general.architecture", (0,))[0] != _STRING:
        raise _Bad("it has no tensors or no general.architecture (a vocabulary-only file?)")
    return {"meta": {k: v[1] for k, v in meta.items() if v}, "tensors": tensors}


def _scan(path: Path) -> dict:
    """Check a GGUF file and return what _walk found; every failure becomes a SpecxError."""
    if not Path(path).is_file():
        raise ModelUnavailable(f"model file not found: {path}")
    try:
        if os.path.getsize(path) == 0:
            raise _Bad("it is empty")
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _walk(buf)
    except _Bad as e:
        raise ModelFileError(f"{path} is not a readable GGUF file: {e}", hint=_DAMAGED) from None
    except OSError as e:
        raise ModelFileError(f"cannot read {path}: {e.strerror or e}", hint="check the file's permissions") from e
    except Exception as e:  # struct.error, UnicodeDecodeError, OverflowError, MemoryError, RecursionError...
        raise ModelFileError(f"{path} is not a readable GGUF file: {type(e).__name__}: {e}", hint=_DAMAGED) from e


def check_gguf(path: Path) -> None:
    """Validate a GGUF file quickly, before transformers touches it."""
    _scan(path)
