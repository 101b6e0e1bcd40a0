"""Whether the lean decoder runs a model file, and what its weights cost, from the file's header alone.

The memory plan (memory/shapes.py) and loading (models/resolve.py) both ask here before any weight is
read: a GGUF of a supported architecture whose matrices all have kernels, or a safetensors folder of one
in F32/F16/BF16, runs as the file holds it; anything else runs through transformers' own model."""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..cpu.qweight import BLOCKS, reencoded_bytes
from ..errors import SpecxError
from . import config as configs

SAFETENSORS_BYTES = {"F32": 4, "F16": 2, "BF16": 2}
TORCH_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}   # how a folder's formats are said


@dataclass(frozen=True)
class FileInfo:
    """What the header says: why the lean decoder cannot run it ("" when it can), the file's bytes per
    placement group, and how it holds its matrices ("Q4_K/Q6_K", most bytes first)."""

    reason: str
    groups: tuple[tuple[tuple[str, int | None], int], ...]
    format: str
    counts: tuple[tuple[tuple[str, int | None], tuple[int, int, int]], ...] = ()   # (params, matrix params,
    #   matrix rows) per group: the elements of its tensors, of its 2-D ones, and their output rows
    config: configs.DecoderConfig | None = None   # a GGUF's, read from its metadata
    gpu_groups: tuple[tuple[tuple[str, int | None], int], ...] = ()   # a GGUF's bytes per group on a GPU, its
    #   matrices as gpu/blocks.py's planes (a type without planes in bfloat16), vectors in float32
    q4_groups: tuple[tuple[tuple[str, int | None], int], ...] = ()   # bytes per group as a drafter holds them with
    #   its layer matrices wider than Q4_0 re-encoded (decoder/reencode.py, --draft-quant q4)

    def group_bytes(self) -> dict[tuple[str, int | None], int]:
        """Keys ("embed", None), ("layer", i), ("norm", None), ("head", None), ("other", None)."""
        return dict(self.groups)


def inspect(path: Path) -> FileInfo:
    """The lean decoder's view of a GGUF file or model folder, read once per file version."""
    path = Path(path)
    target = path / "config.json" if path.is_dir() else path
    try:
        st = target.stat()
        return _inspect(str(path.resolve()), st.st_size, st.st_mtime_ns)
    except OSError as e:
        return FileInfo(f"cannot read {path}: {e.strerror}", (), "?")


def reason(path: Path) -> str:
    """Why the lean decoder cannot run this GGUF file or model folder ("" when it can)."""
    return inspect(path).reason


@functools.lru_cache(maxsize=16)
def _inspect(path: str, size: int, mtime: int) -> FileInfo:
    from ..gpu.blocks import device_bytes

    path = Path(path)
    folder = path.is_dir()
    try:
        config = None
        if folder:
            tensors = _folder(path)
            why = _folder_reason(path, tensors)
        else:
            tensors, meta = _gguf(path)
            config = configs.from_gguf(meta, {name: shape for name, (_, shape, _) in tensors.items()})
            why = _gguf_reason(tensors)
    except SpecxError as e:
        return FileInfo(e.message, (), "?")
    groups: dict[tuple[str, int | None], int] = {}
    q4: dict[tuple[str, int | None], int] = {}
    on_gpu: dict[tuple[str, int | None], int] = {}
    counts: dict[tuple[str, int | None], tuple[int, int, int]] = {}
    kinds: dict[str, int] = {}
    for name, (kind, shape, nbytes) in tensors.items():
        key = _group_of(name)
        groups[key] = groups.get(key, 0) + nbytes
        elements, matrix = math.prod(shape), len(shape) == 2
        rows = (shape[0] if folder else shape[1]) if matrix else 0   # a GGUF lists ne0 (columns) first
        q4[key] = q4.get(key, 0) + (reencoded_bytes(rows, elements // rows, nbytes)
                                    if matrix and rows and key[0] == "layer" else nbytes)
        if not folder:
            on_gpu[key] = on_gpu.get(key, 0) + (device_bytes(kind, rows, shape[0]) if matrix else 4 * elements)
        params, linear, out = counts.get(key, (0, 0, 0))
        counts[key] = (params + elements, linear + elements * matrix, out + rows)
        if matrix:
            said = TORCH_NAMES.get(kind, kind) if folder else kind
            kinds[said] = kinds.get(said, 0) + nbytes
    fmt = "/".join(k for k, _ in sorted(kinds.items(), key=lambda kv: -kv[1])) or "?"
    return FileInfo(why, tuple(groups.items()), fmt, tuple(counts.items()), config, tuple(on_gpu.items()),
                    tuple(q4.items()))


def _gguf(path: Path) -> tuple[dict[str, tuple[str, tuple[int, ...], int]], dict]:
    """(name -> (type name, shape in ggml order, bytes), the metadata)."""
    from .gguf_file import open_gguf, type_name

    gguf = open_gguf(path)
    try:
        return {name: (type_name(info.type), info.shape, info.nbytes) for name, info in gguf.tensors.items()}, \
            dict(gguf.meta)
    finally:
        gguf.close()


def _gguf_reason(tensors) -> str:
    for name, (kind, shape, _) in tensors.items():
        if len(shape) == 2 and kind not in BLOCKS:
            return f"{name} is stored as {kind}, which specx's kernels do not read"
    return ""


def _folder(path: Path) -> dict[str, tuple[str, tuple[int, ...], int]]:
    return {name: (info["dtype"], tuple(info["shape"]), info["data_offsets"][1] - info["data_offsets"][0])
            for name, info in _safetensors_headers(path).items()}


def _folder_reason(path: Path, tensors) -> str:
    try:
        model_type = json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError):
        return "it has no readable config.json"
    if model_type not in configs.HF_TYPES:
        return f"the lean decoder does not run {model_type!r} models"
    other = sorted({kind for kind, _, _ in tensors.values()} - set(SAFETENSORS_BYTES))
    return f"its weights are {', '.join(other)}; the lean decoder reads F32, F16 and BF16" if other else ""


def _group_of(name: str) -> tuple[str, int | None]:
    """GGUF (blk.N.*, token_embd, output_norm, output) and transformers (model.layers.N.*, model.embed_tokens,
    model.norm, lm_head) tensor names to placement groups."""
    for prefix in ("blk.", "model.layers."):
        if name.startswith(prefix):
            return "layer", int(name[len(prefix):].split(".", 1)[0])
    if name.startswith(("token_embd.", "model.embed_tokens.")):
        return "embed", None
    if name.startswith(("output_norm.", "model.norm.")):
        return "norm", None
    if name.startswith(("output.", "lm_head.")):
        return "head", None
    return "other", None


def _safetensors_headers(path: Path) -> dict[str, dict]:
    """Every tensor's header entry (dtype, shape, data_offsets) in a folder's *.safetensors files."""
    out: dict[str, dict] = {}
    for file in sorted(path.glob("*.safetensors")):
        with open(file, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            try:
                header = json.loads(f.read(n)) if 2 <= n <= file.stat().st_size - 8 else None
            except ValueError:
                header = None
        if not isinstance(header, dict):
            from ..errors import ModelFileError

            raise ModelFileError(f"{file.name} is not a safetensors file (bad header)")
        out.update({k: v for k, v in header.items() if k != "__metadata__"})
    return out
