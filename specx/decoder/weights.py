"""A decoder's tensors by role, from a GGUF file or a safetensors folder, without copying the big ones:
every matrix is a QWeight viewing the file's memory map in the file's own format (GGUF blocks, or F32/F16/BF16
rows of a safetensors file), grouped as the decoder runs them: one QKV group, one gate/up group. Norm weights
and biases are small float32 copies, norms in multiplicative form (HF Gemma's 1 + w applied here)."""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np
import torch

from ..cpu.qweight import BLOCKS, NAMES, QWeight
from ..errors import ModelFileError
from .config import DecoderConfig, UnsupportedArchitecture
from .filerows import FileRows

# role -> tensor name in each layer (GGUF: llama.cpp's names; HF: transformers'); the norms' roles: attn_norm
# before attention, ffn_norm before the MLP, post_* after them (Gemma 3's extra pair)
GGUF_LAYER = {"attn_norm": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
              "q_norm": "attn_q_norm", "k_norm": "attn_k_norm", "post_attn_norm": "post_attention_norm",
              "ffn_norm": "ffn_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
              "post_ffn_norm": "post_ffw_norm"}
HF_LAYER = {"attn_norm": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
            "v": "self_attn.v_proj", "o": "self_attn.o_proj", "q_norm": "self_attn.q_norm",
            "k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm", "gate": "mlp.gate_proj",
            "up": "mlp.up_proj", "down": "mlp.down_proj"}
HF_GEMMA_LAYER = {**HF_LAYER, "post_attn_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
                  "post_ffn_norm": "post_feedforward_layernorm"}
SAFETENSORS_TYPES = {"F32": "F32", "F16": "F16", "BF16": "BF16"}   # safetensors dtype -> QWeight type name


@dataclass
class LayerWeights:
    attn_norm: torch.Tensor
    qkv: list[QWeight]                 # [q, k, v]: one fused projection
    qkv_bias: torch.Tensor | None
    o: list[QWeight]
    o_bias: torch.Tensor | None
    ffn_norm: torch.Tensor
    gate_up: list[QWeight]             # [gate, up]
    down: list[QWeight]
    q_norm: torch.Tensor | None = None
    k_norm: torch.Tensor | None = None
    post_attn_norm: torch.Tensor | None = None
    post_ffn_norm: torch.Tensor | None = None


@dataclass
class Weights:
    embed: QWeight
    layers: list[LayerWeights]
    norm: torch.Tensor
    output: QWeight
    lookup: FileRows | None = None   # the untied embedding read by rows (filerows.py); None: looked up in `embed`

    def rows(self, ids: Sequence[int]) -> tuple[QWeight, list[int]]:
        """(a table, each id's row in it) for an embedding lookup of `ids`."""
        return self.lookup.take(ids) if self.lookup is not None else (self.embed, ids)

    def matrices(self) -> list[QWeight]:
        """Every matrix once (a tied output layer is the embedding)."""
        seen = [self.embed] + [w for l in self.layers for w in (*l.qkv, *l.o, *l.gate_up, *l.down)]
        return seen + ([self.output] if self.output is not self.embed else [])

    @property
    def nbytes(self) -> int:
        return sum(w.nbytes for w in self.matrices())

    def types(self) -> str:
        """The formats of the matrices, most bytes first: "Q4_K/Q6_K"."""
        count = Counter()
        for w in self.matrices():
            count[w.name] += w.nbytes
        return "/".join(name for name, _ in count.most_common())


class _Source:
    """Tensors by name from one file format: matrices as QWeights, vectors as float32 tensors."""

    def __init__(self, names: set[str], matrix: Callable[[str], QWeight], vector: Callable[[str], np.ndarray],
                 rows: Callable[[str], FileRows]):
        self.names, self._matrix, self._vector, self.rows = names, matrix, vector, rows

    def matrix(self, name: str, rows: int, cols: int) -> QWeight:
        w = self._matrix(self._need(name))
        if (w.rows, w.cols) != (rows, cols):
            raise ModelFileError(f"{name} is {w.rows}x{w.cols}, the config says {rows}x{cols}")
        return w

    def vector(self, name: str, size: int, plus_one: bool = False) -> torch.Tensor | None:
        if name not in self.names:
            return None
        v = torch.from_numpy(np.array(self._vector(name), dtype=np.float32).reshape(-1))
        if v.numel() != size:
            raise ModelFileError(f"{name} has {v.numel()} values, the config says {size}")
        return 1.0 + v if plus_one else v

    def _need(self, name: str) -> str:
        if name not in self.names:
            raise ModelFileError(f"the model file lacks {name}", "the file is incomplete or not of this architecture")
        return name


def from_gguf(gguf, config: DecoderConfig) -> Weights:
    """The weights of an opened GGUFFile (gguf_file.open_gguf), as the file holds them."""
    for name, info in gguf.tensors.items():
        if info.type not in NAMES and len(info.shape) == 2:
            raise UnsupportedArchitecture(
                f"{name} is stored as {_ggml_name(info.type)}, which specx's kernels do not read",
                "use a Q4_K_M, Q5_K_M, Q6_K, Q8_0 or IQ4_XS file, or run it through transformers")
    source = _Source(set(gguf.tensors), gguf.weight, gguf.array, gguf.rows)
    return _build(source, config, lambda i, role: f"blk.{i}.{GGUF_LAYER[role]}", "token_embd", "output_norm",
                  "output", ".weight", ".bias", False)


def from_safetensors(folder: Path, config: DecoderConfig) -> Weights:
    """The weights of a Hugging Face folder's *.safetensors files, viewed through memory maps."""
    tensors: dict[str, _Tensor] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        tensors.update(_safetensors(path))

    def matrix(name: str) -> QWeight:
        t = tensors[name]
        if t.dtype not in SAFETENSORS_TYPES or len(t.shape) != 2:
            raise UnsupportedArchitecture(f"{name} is a {t.dtype} tensor of shape {t.shape}; "
                                          "specx reads F32/F16/BF16 matrices")
        return QWeight(BLOCKS[SAFETENSORS_TYPES[t.dtype]][0], t.data, t.shape[0], t.shape[1])

    def vector(name: str) -> np.ndarray:
        t = tensors[name]
        if t.dtype == "BF16":
            return (t.data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        return t.data.view({"F32": np.float32, "F16": np.float16}[t.dtype]).astype(np.float32)

    def rows(name: str) -> FileRows:
        w, t = matrix(name), tensors[name]
        return FileRows(t.file.fileno(), t.offset, w.type, w.rows, w.cols, t.stamp, name)

    layer = HF_GEMMA_LAYER if config.family == "gemma3" else HF_LAYER
    return _build(_Source(set(tensors), matrix, vector, rows), config,
                  lambda i, role: f"model.layers.{i}.{layer[role]}",
                  "model.embed_tokens", "model.norm", "lm_head", ".weight", ".bias", config.norm_plus_one)


def _build(src: _Source, c: DecoderConfig, name, embed: str, norm: str, output: str, w: str, b: str,
           plus_one: bool) -> Weights:
    h = c.hidden_size

    def layer(i: int) -> LayerWeights:
        def vec(role, size=h, suffix=w, one=plus_one):
            return src.vector(name(i, role) + suffix, size, one)

        qkv = [src.matrix(name(i, r) + w, rows, h) for r, rows in (("q", c.q_size), ("k", c.kv_size), ("v", c.kv_size))]
        biases = [vec(r, n, b, False) for r, n in (("q", c.q_size), ("k", c.kv_size), ("v", c.kv_size))]
        qkv_bias = None if all(x is None for x in biases) else torch.cat(
            [x if x is not None else torch.zeros(n) for x, n in zip(biases, (c.q_size, c.kv_size, c.kv_size))])
        return LayerWeights(
            attn_norm=_required(vec("attn_norm"), name(i, "attn_norm")), qkv=qkv, qkv_bias=qkv_bias,
            o=[src.matrix(name(i, "o") + w, h, c.q_size)], o_bias=vec("o", h, b, False),
            ffn_norm=_required(vec("ffn_norm"), name(i, "ffn_norm")),
            gate_up=[src.matrix(name(i, r) + w, c.intermediate_size, h) for r in ("gate", "up")],
            down=[src.matrix(name(i, "down") + w, h, c.intermediate_size)],
            q_norm=vec("q_norm", c.head_dim) if c.qk_norm else None,
            k_norm=vec("k_norm", c.head_dim) if c.qk_norm else None,
            post_attn_norm=vec("post_attn_norm") if c.sandwich_norms else None,
            post_ffn_norm=vec("post_ffn_norm") if c.sandwich_norms else None)

    table = src.matrix(embed + w, c.vocab_size, h)
    head = table if c.tie_word_embeddings else src.matrix(output + w, c.vocab_size, h)
    layers = [layer(i) for i in range(c.num_hidden_layers)]
    for i, l in enumerate(layers):
        if c.qk_norm and (l.q_norm is None or l.k_norm is None) or c.sandwich_norms and (
                l.post_attn_norm is None or l.post_ffn_norm is None):
            raise ModelFileError(f"layer {i} lacks a norm its architecture has")
    lookup = None if head is table else src.rows(embed + w)
    return Weights(table, layers, _required(src.vector(norm + w, h, plus_one), norm), head, lookup)


def _required(v: torch.Tensor | None, name: str) -> torch.Tensor:
    if v is None:
        raise ModelFileError(f"the model file lacks {name}", "the file is incomplete or not of this architecture")
    return v


def _ggml_name(type_id: int) -> str:
    from gguf import GGMLQuantizationType

    try:
        return GGMLQuantizationType(type_id).name
    except ValueError:
        return f"ggml type {type_id}"


class _Tensor(NamedTuple):
    dtype: str
    shape: tuple[int, ...]
    data: np.ndarray     # a uint8 view of the file's map
    file: BinaryIO       # the file the map was made from, where the tensor starts in it, and the file's
    offset: int          # (size, mtime_ns) when it was mapped
    stamp: tuple[int, int]


def _safetensors(path: Path) -> dict[str, _Tensor]:
    """name -> its _Tensor, from one file's header, bounds checked."""
    file = open(path, "rb")
    st = os.fstat(file.fileno())
    mm = np.memmap(file, dtype=np.uint8, mode="r")
    size = mm.size
    n = int.from_bytes(bytes(mm[:8]), "little") if size >= 8 else -1
    if n < 2 or 8 + n > size:
        raise ModelFileError(f"{path.name} is not a safetensors file (bad header length)")
    try:
        header = json.loads(bytes(mm[8:8 + n]))
    except ValueError:
        raise ModelFileError(f"{path.name}: the safetensors header is not JSON") from None
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end or 8 + n + end > size:
            raise ModelFileError(f"{path.name}: tensor {name} lies outside the file")
        out[name] = _Tensor(info["dtype"], tuple(int(d) for d in info["shape"]), mm[8 + n + begin:8 + n + end],
                            file, 8 + n + begin, (st.st_size, st.st_mtime_ns))
    return out
