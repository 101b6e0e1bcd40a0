"""A GGUF file's header, parsed and checked: its metadata and its tensor table (gguf_file.py maps the file and
hands out its tensors).

Every length, count, offset and size read from the file is checked against the bytes left and the limits
below before it is used, so a damaged or hostile file costs neither memory nor time and ends in one BadFile
(open_gguf: a ModelFileError), never in another exception, and never in a kernel reading past the file.

One parse serves every open of a file in a process (parse_once): the memory plan reads the header, then the
loader opens the file again. It is reused only for the same inode, size and mtime, and header bytes of the
same sha256, so a file replaced or rewritten is parsed (and checked) again."""
from __future__ import annotations

import hashlib
import os
import struct
import threading
from collections import OrderedDict
from math import prod
from typing import NamedTuple

import numpy as np

from ..cpu.qweight import BLOCKS, NAMES
from .gguf_strings import BadStrings, Strings, read_strings

_MAGIC, _VERSIONS = b"GGUF", (2, 3)  # v1 counted in 32 bits; no file in the wild still uses it
_MAX_DIMS = 4                        # GGML_MAX_DIMS
_MAX_NAME = 65535                    # the spec's bound on a key; tensor names are held to it too
_MAX_NESTING = 3                     # arrays of arrays are legal but rare; a bound keeps recursion shallow
_MAX_TENSORS = 1 << 20               # hundreds of times the largest tensor tables (MoE models)
_DEFAULT_ALIGNMENT = 32              # GGUF_DEFAULT_ALIGNMENT
_PARSES_KEPT = 4                     # a run opens its target and drafter twice each (plan, then load)

# metadata value types -> (struct code, numpy dtype); 7 is bool, 8 string, 9 array
_SCALARS = {0: ("B", "u1"), 1: ("b", "i1"), 2: ("H", "<u2"), 3: ("h", "<i2"), 4: ("I", "<u4"), 5: ("i", "<i4"),
            6: ("f", "<f4"), 7: ("?", "u1"), 10: ("Q", "<u8"), 11: ("q", "<i8"), 12: ("d", "<f8")}
_BOOL, _STRING, _ARRAY, _UINT32 = 7, 8, 9, 4
_KERNEL_BLOCKS = {tid: (per_block, size) for tid, per_block, size in BLOCKS.values()}
_U64, _U32 = struct.Struct("<Q"), struct.Struct("<I")
_SCALAR_STRUCTS = {vtype: struct.Struct("<" + code) for vtype, (code, _) in _SCALARS.items()}


class TensorInfo(NamedTuple):
    """One tensor of the file: ggml `type` id, `shape` in ggml order (ne0, the row length, first),
    absolute `offset` of its first byte in the file, and `nbytes`. For a type this reader does not
    know, `nbytes` is the room up to the next tensor (its true size cannot be computed)."""

    type: int
    shape: tuple[int, ...]
    offset: int
    nbytes: int


def type_name(type_id: int) -> str:
    """ggml's name of a tensor type ("Q4_K"), or "type N" for one the gguf package does not know."""
    if type_id in NAMES:
        return NAMES[type_id]
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(type_id).name
    except ValueError:
        return f"type {type_id}"


def known_type(type_id: int) -> bool:
    """Whether ggml's type table (the gguf package's) knows this type id: its sizes can be checked."""
    return _block(type_id) is not None


def _block(type_id: int) -> tuple[int, int] | None:
    """(values per block, bytes per block), or None for a type unknown to ggml's table."""
    if type_id in _KERNEL_BLOCKS:
        return _KERNEL_BLOCKS[type_id]
    from gguf.constants import GGML_QUANT_SIZES  # only for types without a kernel (imports ~0.1 s)

    return GGML_QUANT_SIZES.get(type_id)


class BadFile(Exception):
    """What the parse found wrong (open_gguf turns it into a ModelFileError naming the file)."""


class _Cursor:
    """A little-endian read position in the mapped file; every step is checked against its end."""

    def __init__(self, buf, size: int):
        self.buf, self.size, self.pos = buf, size, 0

    def room(self, n: int) -> None:
        if n > self.size - self.pos:
            raise BadFile(f"a size at offset {self.pos} runs past the end of the file (truncated?)")

    def take(self, n: int) -> int:
        """Step over n bytes; return where they start."""
        self.room(n)
        self.pos += n
        return self.pos - n

    def u32(self) -> int:
        return _U32.unpack_from(self.buf, self.take(4))[0]

    def u64(self) -> int:
        return _U64.unpack_from(self.buf, self.take(8))[0]

    def text(self, limit: int | None = None) -> str:
        n = self.u64()
        if limit is not None and n > limit:
            raise BadFile(f"a name at offset {self.pos - 8} is {n} bytes long (at most {limit})")
        start = self.take(n)
        try:
            return str(self.buf[start:self.pos], "utf-8")
        except UnicodeDecodeError:
            raise BadFile(f"the string at offset {start - 8} is not UTF-8") from None

    def value(self, vtype: int, depth: int = 0):
        """One metadata value: a Python scalar, a str, a numpy array, Strings, or a list."""
        if vtype in _SCALARS:
            form = _SCALAR_STRUCTS[vtype]
            return form.unpack_from(self.buf, self.take(form.size))[0]
        if vtype == _STRING:
            return self.text()
        if vtype != _ARRAY:
            raise BadFile(f"unknown metadata value type {vtype}")
        if depth >= _MAX_NESTING:
            raise BadFile(f"arrays nested more than {_MAX_NESTING} deep at offset {self.pos}")
        itype, count = self.u32(), self.u64()
        if itype in _SCALARS:
            dtype = np.dtype(_SCALARS[itype][1])
            start = self.take(count * dtype.itemsize)
            values = np.frombuffer(self.buf, dtype, count, start).copy()
            values = values != 0 if itype == _BOOL else values
            values.flags.writeable = False  # a parse is shared by every open of the file (_parse_once)
            return values
        self.room(count * 8)  # a string or an array takes at least 8 bytes: count is bounded first
        if itype == _STRING:
            return self.strings(count)
        return [self.value(itype, depth + 1) for _ in range(count)]

    def strings(self, count: int) -> Strings:
        """count strings, checked now and decoded when read (vocabularies and merge tables: 150k+ each)."""
        try:
            values, self.pos = read_strings(self.buf, self.pos, self.size, count)
        except BadStrings as e:
            raise BadFile(str(e)) from None
        return values


def _read_meta(c: _Cursor, n_kv: int) -> tuple[dict, dict, dict]:
    """{key: value}, {key: value type}, {key: (start, end) of its type and value bytes}."""
    c.room(n_kv * 13)  # a key/value pair takes at least 13 bytes
    meta, types, spans = {}, {}, {}
    for _ in range(n_kv):
        key = c.text(_MAX_NAME)
        if key in meta:
            raise BadFile(f"metadata key {key!r} appears twice")
        start = c.pos
        types[key] = c.u32()
        meta[key] = c.value(types[key])
        spans[key] = (start, c.pos)
    return meta, types, spans


def _read_table(c: _Cursor, n_tensors: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    """[(name, shape in ggml order, type, offset from the data section)]; names unique, dims sane."""
    if n_tensors > _MAX_TENSORS:
        raise BadFile(f"it declares {n_tensors} tensors (at most {_MAX_TENSORS})")
    c.room(n_tensors * 24)  # a tensor entry takes at least 24 bytes
    entries, names = [], set()
    for _ in range(n_tensors):
        name, n_dims = c.text(_MAX_NAME), c.u32()
        if not 1 <= n_dims <= _MAX_DIMS:
            raise BadFile(f"tensor {name!r} has {n_dims} dimensions (1 to {_MAX_DIMS})")
        shape = struct.unpack_from(f"<{n_dims}Q", c.buf, c.take(8 * n_dims))
        if 0 in shape:
            raise BadFile(f"tensor {name!r} has an empty dimension: {shape}")
        if name in names:
            raise BadFile(f"tensor {name!r} appears twice")
        names.add(name)
        entries.append((name, shape, c.u32(), c.u64()))
    return entries


def _alignment(meta: dict, types: dict) -> int:
    align = meta.get("general.alignment", _DEFAULT_ALIGNMENT)
    if types.get("general.alignment", _UINT32) != _UINT32 or align <= 0 or align & (align - 1):
        raise BadFile(f"general.alignment {align!r} is not a power of two stored as uint32")
    return align


def _place(entries: list, data_start: int, align: int, size: int) -> dict[str, TensorInfo]:
    """TensorInfos with absolute offsets; each tensor aligned, whole blocks, inside the file, and
    no two overlapping."""
    placed = []
    for name, shape, ttype, rel in entries:
        if rel % align:
            raise BadFile(f"tensor {name!r} starts at {rel}, not a multiple of the alignment {align}")
        start, block = data_start + rel, _block(ttype)
        nbytes = None
        if block is not None:
            if shape[0] % block[0]:
                raise BadFile(f"tensor {name!r} has rows of {shape[0]} values, not whole blocks of {block[0]}")
            nbytes = prod(shape) // block[0] * block[1]
        if start > size or nbytes is not None and nbytes > size - start:
            raise BadFile(f"tensor {name!r} lies past the end of the file (truncated download?)")
        placed.append((start, name, shape, ttype, nbytes))
    placed.sort()
    tensors = {}
    for i, (start, name, shape, ttype, nbytes) in enumerate(placed):
        room = (placed[i + 1][0] if i + 1 < len(placed) else size) - start
        if nbytes is None:
            nbytes = room  # unknown type: all it can hold is the room up to the next tensor
        if nbytes > room or nbytes == 0:
            raise BadFile(f"tensor {name!r} overlaps the next tensor in the file")
        tensors[name] = TensorInfo(ttype, shape, start, nbytes)
    return {name: tensors[name] for name, *_ in entries}  # in the file's table order


_parses: OrderedDict[tuple, tuple[int, bytes, tuple]] = OrderedDict()
_parses_lock = threading.Lock()


def parse_once(file, buf) -> tuple[int, dict, dict, dict]:
    """_parse's result, reused while the file is the same inode, size and mtime and its header the same
    bytes (a sha256 of them: a file rewritten in place within one mtime tick is parsed again). The
    memory plan and the loader each open a run's model file; the second open costs a hash, not a parse."""
    st = os.fstat(file.fileno())
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _parses_lock:
        kept = _parses.get(key)
    if kept is None or hashlib.sha256(buf[:kept[0]]).digest() != kept[1]:
        header_end, parsed = _parse(buf, len(buf))
        kept = (header_end, hashlib.sha256(buf[:header_end]).digest(), parsed)
    with _parses_lock:
        _parses[key] = kept
        _parses.move_to_end(key)
        while len(_parses) > _PARSES_KEPT:
            _parses.popitem(last=False)
    version, meta, spans, tensors = kept[2]
    return version, dict(meta), dict(spans), dict(tensors)  # values shared by the opens (numeric arrays read-only)


def _parse(buf, size: int) -> tuple[int, tuple[int, dict, dict, dict]]:
    """(where the header ends, (version, meta, spans, tensors)) of a mapped GGUF file, or BadFile."""
    if bytes(buf[:4]) != _MAGIC:
        raise BadFile("it does not start with the GGUF magic bytes")
    c = _Cursor(buf, size)
    c.pos = 4
    version = c.u32()
    if version not in _VERSIONS:
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        raise BadFile("it is a big-endian GGUF (not supported)" if swapped in _VERSIONS
                   else f"GGUF version {version} is not supported (only 2 and 3)")
    n_tensors, n_kv = c.u64(), c.u64()
    meta, types, spans = _read_meta(c, n_kv)
    entries = _read_table(c, n_tensors)
    align = _alignment(meta, types)
    data_start = -(-c.pos // align) * align
    return c.pos, (version, meta, spans, _place(entries, data_start, align, size))
