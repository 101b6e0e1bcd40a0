"""A target's Q2_K copy of its own layers, built once and kept on disk (`--drafter self-q2k`).

One file per model file under paths.copy_cache(), named by the model's identity (resolved path, size,
mtime_ns) and FORMAT: a header (MAGIC, then the JSON of that identity and every matrix's shape) and the
matrices' Q2_K blocks, layer after layer in the decoder's order (q, k, v, o, gate, up, down). It is written
under a temporary name and renamed into place (a reader never sees half a file; a lock keeps two first runs
from building it twice), and read back into 2 MiB pages where the kernel gives them, not mapped, as the
target's own layers are (decoder/resident.py; benchmarks/results/2026-11-27-self-q2k). A file whose header is not this model's, or whose
size is not the header's plus the matrices', is rebuilt, never read. The bytes themselves are not hashed: a
damaged block can only lower acceptance, never the output (the target verifies every token)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ..cpu.qweight import BLOCKS, QWeight
from ..decoder import resident

MAGIC = b"SPECXQ2K"
FORMAT = 1           # the file layout and the quantizer's rule (lowbit_ref.py): a change makes old copies stale
ALIGN = 64           # the blocks start at a multiple of this (the kernels' loads)
Q2_K = BLOCKS["Q2_K"][0]
CHUNK_ROWS = 1024    # rows decoded and quantized at a time: bounds the float32 scratch (1024 x 8960 x 4 = 37 MB)


def identity(model_path: Path) -> dict:
    path = Path(model_path).resolve()
    st = path.stat()
    return {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": FORMAT}


def cache_file(model_path: Path) -> Path:
    from ..state.paths import copy_cache

    ident = identity(model_path)
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    return copy_cache() / f"{Path(ident['path']).stem}-{digest}.q2k"


def matrices(weights) -> list[QWeight]:
    """The layer matrices a copy holds, in file order."""
    return [m for layer in weights.layers for m in (*layer.qkv, *layer.o, *layer.gate_up, *layer.down)]


def copy_bytes(shapes: list[tuple[int, int]]) -> int:
    _, per, size = BLOCKS["Q2_K"]
    return sum(rows * (cols // per) * size for rows, cols in shapes)


def load_or_build(model_path: Path, weights, notify=None) -> tuple[list[QWeight], bool]:
    """The copy's matrices (Q2_K QWeights over the cache file's map) and whether it was built just now."""
    from ..state.atomicio import locked

    path = cache_file(model_path)
    header = _header(identity(model_path), [(m.rows, m.cols) for m in matrices(weights)])
    found = read(path, header)
    if found is not None:
        return found, False
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(path.name + ".lock")):
        found = read(path, header)   # another process may have built it while this one waited
        if found is not None:
            return found, False
        if path.exists() and notify:
            notify(f"note: the 2-bit copy {path.name} is stale or damaged: building it again")
        write(path, header, matrices(weights))
    found = read(path, header)
    if found is None:
        raise OSError(f"the 2-bit copy {path} did not read back after it was written")
    return found, True


def read(path: Path, header: bytes) -> list[QWeight] | None:
    """The matrices of the file at `path` when its header is `header` and its size the one it implies; else None."""
    try:
        with open(path, "rb") as f:
            if f.read(len(header)) != header or os.fstat(f.fileno()).st_size != _size(header):
                return None
            f.seek(_start(header))
            n = _size(header) - _start(header)
            data = resident.region(n) if resident.wanted() else np.empty(n, dtype=np.uint8)
            if f.readinto(memoryview(data)) != n or f.read(1):
                return None   # changed while it was read
    except OSError:
        return None
    out, at = [], 0
    for rows, cols in json.loads(_json(header))["shapes"]:
        n = copy_bytes([(rows, cols)])
        out.append(QWeight(Q2_K, data[at:at + n], rows, cols))
        at += n
    return out


def write(path: Path, header: bytes, sources: list[QWeight]) -> None:
    """Each source matrix decoded (the kernels' row decode: gguf's values) and quantized, into a temp file
    renamed over `path`."""
    from ..cpu import lowbit, quant

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            f.write(bytes(_start(header) - len(header)))
            for m in sources:
                for first in range(0, m.rows, CHUNK_ROWS):
                    rows = np.arange(first, min(first + CHUNK_ROWS, m.rows))
                    f.write(lowbit.quantize_q2_k(quant.embed(m, rows).numpy()).tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _header(ident: dict, shapes: list[tuple[int, int]]) -> bytes:
    text = json.dumps({"identity": ident, "shapes": [list(s) for s in shapes]}, sort_keys=True).encode()
    return MAGIC + len(text).to_bytes(8, "little") + text


def _json(header: bytes) -> bytes:
    return header[len(MAGIC) + 8:]


def _start(header: bytes) -> int:
    return -(-len(header) // ALIGN) * ALIGN


def _size(header: bytes) -> int:
    shapes = json.loads(_json(header))["shapes"]
    return _start(header) + copy_bytes([tuple(s) for s in shapes])
