"""A stand-in for gguf_file.open_gguf and tokenizer.load_tokenizer over the `gguf` package's reader (slow to
open, correct), with the same API, until specx's own bounded reader lands: then only an import changes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cpu.qweight import QWeight, dequantize
from ..runtime.errors import ModelFileError


@dataclass(frozen=True)
class TensorInfo:
    type: int
    shape: tuple[int, ...]   # ggml order: ne0 (the contiguous dimension) first
    offset: int
    nbytes: int


class GGUFFile:
    """One GGUF file read through gguf.GGUFReader's memory map."""

    def __init__(self, path: Path):
        from gguf import GGUFReader

        self.path = Path(path)
        try:
            self._reader = GGUFReader(self.path)
        except (ValueError, OSError, IndexError) as e:
            raise ModelFileError(f"cannot read {self.path.name}: {e}") from None
        self.version = int(self._reader.fields["GGUF.version"].contents())
        self.meta = {name: _value(field) for name, field in self._reader.fields.items()
                     if not name.startswith("GGUF.")}
        self._by_name = {t.name: t for t in self._reader.tensors}
        self.tensors = {t.name: TensorInfo(int(t.tensor_type), tuple(int(n) for n in t.shape), int(t.data_offset),
                                           int(t.n_bytes)) for t in self._reader.tensors}

    def raw(self, name: str) -> np.ndarray:
        return np.asarray(self._by_name[name].data).view(np.uint8).reshape(-1)

    def weight(self, name: str) -> QWeight:
        info = self.tensors[name]
        if len(info.shape) != 2:
            raise ModelFileError(f"{name} is not a matrix (shape {info.shape})")
        return QWeight(info.type, self.raw(name), rows=info.shape[1], cols=info.shape[0])

    def array(self, name: str) -> np.ndarray:
        info = self.tensors[name]
        rows = int(np.prod(info.shape[1:], dtype=np.int64))
        flat = dequantize(QWeight(info.type, self.raw(name), rows=rows, cols=info.shape[0]))
        return flat.reshape(tuple(reversed(info.shape)))

    def close(self) -> None:
        self._reader = None


def _value(field):
    value = field.contents()
    return np.asarray(value) if isinstance(value, list) and value and not isinstance(value[0], str) else value


def open_gguf(path) -> GGUFFile:
    return GGUFFile(Path(path))


def load_tokenizer(gguf: GGUFFile):
    """transformers' own tokenizer of the file (slow: it parses the vocabulary again)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gguf.path.parent, gguf_file=gguf.path.name, trust_remote_code=False)
