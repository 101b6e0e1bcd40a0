"""A GGUF file, mapped once and read without copies: its metadata, its tensor table (gguf_header.py parses
and checks them), its tensors.

The map and the file on disk. A file replaced by rename (huggingface_hub, `specx pull`, any atomic
writer) is safe: the map holds the old inode, which lives until the map closes, so a run reads the
file it opened. A file rewritten in place (`cp` or `curl -o` over it, `truncate`) changes the pages
under the map, and reading a page that truncation cut off faults (SIGBUS). No mapping flag prevents
that (MAP_PRIVATE copies a page only when this process writes to it), so each view handed out first
checks that the inode still has its size and mtime of open time, and `unchanged()` lets a caller
check again at any safe point."""
from __future__ import annotations

import mmap
import os
from math import prod
from pathlib import Path

import numpy as np

from ..cpu.qweight import BLOCKS, NAMES, QWeight
from ..errors import DAMAGED_GGUF, ModelFileError, ModelUnavailable
from .filerows import FileRows
from .gguf_header import BadFile, TensorInfo, known_type, parse_once, type_name

__all__ = ["GGUFFile", "TensorInfo", "known_type", "open_gguf", "type_name"]

# ggml types holding plain values (array() converts them directly); BF16 (30) is widened by hand
_PLAIN = {0: "<f4", 1: "<f2", 24: "i1", 25: "<i2", 26: "<i4", 27: "<i8", 28: "<f8"}
_BF16 = BLOCKS["BF16"][0]


class GGUFFile:
    """A GGUF file mapped read-only once; `meta` and `tensors` are parsed and checked at open.

    meta: scalars as Python values, strings as str, string arrays as Strings (a list[str] decoded
    when read: gguf_strings.py), numeric arrays as read-only numpy arrays. Views (weight, raw) are
    zero-copy; the map closes when close() has been called and the last view is gone."""

    def __init__(self, path: Path, file, buf, version: int, meta: dict, spans: dict, tensors: dict):
        self.path, self.version, self.meta, self.tensors = path, version, meta, tensors
        self._file, self._map, self._spans = file, buf, spans
        self._bytes = np.frombuffer(buf, dtype=np.uint8)
        st = os.fstat(file.fileno())
        self._stamp = (st.st_size, st.st_mtime_ns)

    def weight(self, name: str) -> QWeight:
        """A 2-D tensor as the kernels take it: rows = ne1, cols = ne0, the file's bytes (no copy)."""
        info = self._info(name)
        if len(info.shape) != 2:
            raise ModelFileError(f"{self.path.name}: tensor {name!r} has shape {info.shape}, not a matrix",
                                 hint=DAMAGED_GGUF)
        if info.type not in NAMES:
            raise ModelUnavailable(f"{self.path.name}: tensor {name!r} is {type_name(info.type)}, a GGUF type "
                                   "specx has no kernel for", hint="use a Q4_K_M, Q5_K_M, Q6_K, Q8_0 or IQ4_XS file")
        return QWeight(info.type, self._view(name, info), rows=info.shape[1], cols=info.shape[0])

    def rows(self, name: str) -> FileRows:
        """A matrix read by rows with reads of its own, not through the map (filerows.py: a lookup table)."""
        w, info = self.weight(name), self.tensors[name]
        return FileRows(self._file.fileno(), info.offset, w.type, w.rows, w.cols, self._stamp, name)

    def array(self, name: str) -> np.ndarray:
        """Any tensor as float32 in numpy order (shape reversed from ne): plain values converted, blocks
        dequantized by the `gguf` package (a copy: meant for norms, biases and fallbacks)."""
        info = self._info(name)
        data, shape = self._view(name, info), info.shape[::-1]
        if info.type in _PLAIN:
            return data.view(_PLAIN[info.type]).astype(np.float32).reshape(shape)
        if info.type == _BF16:
            return (data.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
        from gguf import GGMLQuantizationType
        from gguf.quants import dequantize

        try:
            values = dequantize(data.reshape(prod(info.shape[1:]), -1), GGMLQuantizationType(info.type))
        except NotImplementedError:
            raise ModelUnavailable(f"{self.path.name}: tensor {name!r} is {type_name(info.type)}, which "
                                   "the gguf package cannot dequantize") from None
        return values.astype(np.float32, copy=False).reshape(shape)

    def raw(self, name: str) -> np.ndarray:
        """The tensor's bytes as a flat read-only uint8 view of the map."""
        return self._view(name, self._info(name))

    def raw_meta(self, key: str) -> bytes:
        """A metadata value's bytes as the file stores them (type tag, then value): a content key."""
        start, end = self._spans[key]
        return self._open()[start:end].tobytes()

    def unchanged(self) -> bool:
        """Whether the mapped inode still has its size and mtime of open time (a file replaced by
        rename leaves it untouched; one rewritten or cut in place does not)."""
        if self._file.closed:
            return False
        st = os.fstat(self._file.fileno())
        return (st.st_size, st.st_mtime_ns) == self._stamp

    def close(self) -> None:
        """Drop this object's hold on the map; views handed out keep it alive until they are freed."""
        self._bytes = None
        try:
            self._map.close()
        except BufferError:
            pass  # views are still alive: the map is unmapped when the last one is freed
        self._file.close()

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _info(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise ModelFileError(f"{self.path.name} has no tensor {name!r}", hint=DAMAGED_GGUF)
        return self.tensors[name]

    def _view(self, name: str, info: TensorInfo) -> np.ndarray:
        if not known_type(info.type):
            raise ModelUnavailable(f"{self.path.name}: tensor {name!r} has ggml type {info.type}, which this "
                                   "specx does not know (a newer GGUF format?)", hint="update specx and gguf")
        data = self._open()
        if not self.unchanged():
            raise ModelFileError(f"{self.path} changed on disk while specx had it open",
                                 hint="replace model files by rename (download to a new name, then move)")
        return data[info.offset:info.offset + info.nbytes]

    def _open(self) -> np.ndarray:
        if self._bytes is None:
            raise ModelFileError(f"{self.path.name} was closed", hint="open it again")
        return self._bytes


def open_gguf(path: Path | str) -> GGUFFile:
    """Map and check a GGUF file: ModelUnavailable if it is missing, ModelFileError if it is bad."""
    path = Path(path)
    if not path.is_file():
        raise ModelUnavailable(f"model file not found: {path}")
    try:
        file = open(path, "rb")
    except OSError as e:
        raise ModelFileError(f"cannot read {path}: {e.strerror or e}", hint="check the file's permissions") from e
    try:
        if os.fstat(file.fileno()).st_size == 0:
            raise BadFile("it is empty")
        buf = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        return GGUFFile(path, file, buf, *parse_once(file, buf))
    except BadFile as e:
        file.close()
        raise ModelFileError(f"{path} is not a readable GGUF file: {e}", hint=DAMAGED_GGUF) from None
    except OSError as e:
        file.close()
        raise ModelFileError(f"cannot read {path}: {e.strerror or e}", hint="check the file's permissions") from e
    except Exception as e:  # a safety net: every rule above is meant to stop a bad file first
        file.close()
        raise ModelFileError(f"{path} is not a readable GGUF file: {type(e).__name__}: {e}", hint=DAMAGED_GGUF) from e
