"""A GGUF string array, checked when the file opens and decoded when it is read.

A vocabulary and its merge table hold 150k+ strings each, and a run whose tokenizer is cached never
reads them: decoding them all at open (a str object per string) was most of the time a GGUF took to
open. Here the open walks the lengths (each checked against the bytes left), checks that every string
is UTF-8 with one decode of a copy of the array's bytes, and keeps that copy and the strings' offsets;
a string becomes a str when it is asked for. A bad array is refused at open, as before."""
from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

_U64 = struct.Struct("<Q")
_LENGTH = _U64.size


class BadStrings(Exception):
    """What is wrong with the array (the reader names the file)."""


class Strings(Sequence):
    """list[str]-like and read-only: len, index, slice, iterate, equal to a list of the same strings,
    and tolist() (what transformers' converters take)."""

    __slots__ = ("_data", "_starts", "_ends")

    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray):
        self._data, self._starts, self._ends = data, starts, ends

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start, end = int(self._starts[index]), int(self._ends[index])
        return str(self._data[start:end], "utf-8")

    def __iter__(self):
        data = self._data
        return (str(data[s:e], "utf-8") for s, e in zip(self._starts.tolist(), self._ends.tolist()))

    def tolist(self) -> list[str]:
        return list(self)

    def __eq__(self, other) -> bool:
        if isinstance(other, Strings):
            return self.tolist() == other.tolist()
        return isinstance(other, (list, tuple)) and self.tolist() == list(other)

    __hash__ = None  # mutable-looking and compared by content, like a list

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self[:3])
        return f"Strings([{head}{', ...' if len(self) > 3 else ''}], {len(self)} strings)"


def read_strings(buf, pos: int, end: int, count: int) -> tuple[Strings, int]:
    """The `count` length-prefixed strings at `pos` of `buf` (which ends at `end`), and where they end.
    BadStrings for a length past `end` or a string that is not UTF-8."""
    first, unpack, ends = pos, _U64.unpack_from, []
    append = ends.append
    for _ in range(count):
        if end - pos < _LENGTH or (n := unpack(buf, pos)[0]) > end - pos - _LENGTH:
            raise BadStrings(f"a string at offset {pos} runs past the end of the file (truncated?)")
        pos += _LENGTH + n
        append(pos)
    data = bytes(buf[first:pos])
    stops = np.array(ends, dtype=np.int64) - first
    lengths = np.diff(stops, prepend=0) - _LENGTH
    starts = stops - lengths
    _check_utf8(data, starts, first)
    return Strings(data, starts, stops), pos


def _check_utf8(data: bytes, starts: np.ndarray, offset: int) -> None:
    """Every string UTF-8: one decode of the bytes with the length prefixes zeroed. A zero byte ends
    any multi-byte sequence, so the whole decodes exactly when each string does on its own."""
    scratch = bytearray(data)
    view = np.frombuffer(scratch, dtype=np.uint8)
    for k in range(1, _LENGTH + 1):
        view[starts - k] = 0
    try:
        scratch.decode("utf-8")
    except UnicodeDecodeError as e:
        i = max(int(np.searchsorted(starts, e.start, side="right")) - 1, 0)
        raise BadStrings(f"the string at offset {offset + int(starts[i]) - _LENGTH} is not UTF-8") from None
