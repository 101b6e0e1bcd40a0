"""An input embedding table read from its file by rows, not through the memory map.

A lookup needs a few rows of a table of vocabulary-many. Through a map, each row it touches faults in the
kernel's fault-around window as well (64 KiB on Linux; madvise(MADV_RANDOM) does not turn it off), so a
long prompt made a sixth of the 0.5B Qwen's 89 MiB table resident in the process, and a plan could only
bound that by the whole table (benchmarks/results/2026-11-27-embed-rows/). Read with pread, the rows land in
a buffer the lookup frees; the file's pages stay in the page cache, which is no process's resident memory.
Only an untied table is read so: a table that is also the output layer is read whole by every forward.

The reads go through a duplicate of the descriptor the map was made from: a file replaced by rename keeps
serving the opened one, as the map does. A file cut or rewritten in place is an error at the next lookup
(size and mtime checked each time), where a map would read lost pages."""
from __future__ import annotations

import os
import weakref
from collections.abc import Sequence

import numpy as np

from ..cpu.qweight import QWeight, expected_bytes
from ..errors import ModelFileError


class FileRows:
    """Rows of one `type` matrix of `rows` x `cols` stored at `offset` of the file open as `fd` (duplicated
    here, closed with this object); `stamp`: the file's (size, mtime_ns) its other views were checked
    against."""

    def __init__(self, fd: int, offset: int, type_id: int, rows: int, cols: int, stamp: tuple[int, int],
                 name: str):
        self.type, self.rows, self.cols, self.name = type_id, rows, cols, name
        self.row_bytes = expected_bytes(type_id, 1, cols)
        self._offset, self._stamp = offset, stamp
        if offset < 0 or offset + rows * self.row_bytes > stamp[0]:
            raise ModelFileError(f"{name}: its rows lie outside the file")
        self._fd = os.dup(fd)
        weakref.finalize(self, os.close, self._fd)

    def take(self, ids: Sequence[int]) -> tuple[QWeight, list[int]]:
        """(the distinct rows among `ids` as a QWeight, each id's row in it): one read per run of
        consecutive rows."""
        ids = [int(i) for i in ids]
        if any(not 0 <= i < self.rows for i in ids):
            raise ValueError(f"token ids must lie in [0, {self.rows})")
        distinct = sorted(set(ids))
        st = os.fstat(self._fd)
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise ModelFileError(f"the model file of {self.name} changed on disk while specx had it open",
                                 hint="replace model files by rename (download to a new name, then move)")
        data = np.empty(len(distinct) * self.row_bytes, dtype=np.uint8)
        view = memoryview(data)
        start = 0
        for end in range(1, len(distinct) + 1):
            if end == len(distinct) or distinct[end] != distinct[end - 1] + 1:   # a run ends
                span = view[start * self.row_bytes:end * self.row_bytes]
                if os.preadv(self._fd, [span], self._offset + distinct[start] * self.row_bytes) != len(span):
                    raise ModelFileError(f"{self.name}: a read came back short (the file was cut)")
                start = end
        at = {row: n for n, row in enumerate(distinct)}
        return QWeight(self.type, data, len(distinct), self.cols), [at[i] for i in ids]
