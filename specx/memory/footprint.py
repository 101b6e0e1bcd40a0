"""Footprints from the config alone: parameters per module group, bytes per scheme, KV per token, buffers.

The model is built on the meta device (no weights, no memory), so every architecture transformers
implements is counted exactly, tied embeddings once, and MoE experts (fused 3-D tensors in
transformers 5) as groups of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelUnavailable

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# CPU memory a loaded model costs beyond its tensors (its tokenizer, the file's metadata, Python objects), which
# grows with the vocabulary: RSS grew by 117 MiB loading SmolLM2-135M (49,152 entries) and 150-152 MiB for the
# Qwen2.5-Coder 0.5B/1.5B (151,936) in a fresh process (benchmarks/results/2026-11-26-tails): 100 MiB plus
# 340 bytes an entry. Gemma 3's SentencePiece vocabulary (262,144) took 339 MiB, 152 more than this prices.
RUNTIME_BASE = 100 * 2**20
RUNTIME_PER_ENTRY = 340
# The specx process itself: Python with torch and transformers imported held 238 MiB RSS (same source). It
# is resident before any budget is read, so it is never drawn from one, but a plan's peak RSS includes it.
PROCESS_BYTES = 238 * 2**20


def runtime_overhead(vocab: int) -> int:
    """CPU bytes a loaded model holds beyond its tensors, for a vocabulary of `vocab` entries."""
    return RUNTIME_BASE + RUNTIME_PER_ENTRY * max(vocab, 0)


@dataclass(frozen=True)
class Group:
    """A unit of placement: one device_map entry per name in `parts` (disjoint module paths)."""

    name: str
    kind: str                 # embed | layer | experts | norm | head | other
    params: int               # counted once: a head tied to the embeddings has 0
    linear_params: int = 0    # weights of nn.Linear modules inside decoder layers (what bitsandbytes converts)
    linear_rows: int = 0      # their output rows (int8 keeps one fp32 scale per row)
    buffer_bytes: int = 0
    parts: tuple[str, ...] = ()
    layer: int | None = None


@dataclass(frozen=True)
class Shape:
    """What the planner needs to know about one model, without its weights."""

    name: str
    model_type: str
    groups: tuple[Group, ...]
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    max_context: int
    tied: bool
    experts: int = 0          # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    head_weight: int = 0      # elements of the output projection (also when tied to the embeddings)
    file_dtype: str = ""      # what the weight files hold (mapped.file_dtype); '' unknown
    file_bytes: tuple = ()    # ((kind, layer), bytes) per group as the file holds them, when specx's lean
                              # decoder runs the file as it is (decoder/support.py); () otherwise
    file_format: str = ""     # how that file holds its matrices, e.g. "Q4_K/Q6_K"

    @property
    def params(self) -> int:
        return sum(g.params for g in self.groups)

    def linear_weights(self) -> int:
        """Elements in nn.Linear weights (decoder layers and the head): what specx's CPU fast path packs."""
        return sum(g.linear_params for g in self.groups) + self.head_weight

    def kv_elems_per_token(self) -> int:
        """Keys and values of one token over all layers, in elements (× dtype bytes for bytes)."""
        return self.layers * self.kv_heads * self.head_dim * 2

    def kv_bytes_per_token(self, dtype: str) -> int:
        return self.kv_elems_per_token() * DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class Scheme:
    """How weights are stored: bytes per quantizable weight, per scale row, and for everything else."""

    name: str
    weight_bytes: float
    other_dtype: str
    row_bytes: int = 0
    device: str = "any"       # cpu | cuda | any
    lossy: bool = False
    exact: tuple = ()         # ((kind, layer), bytes): each group as a model file holds it (file_scheme)

    def group_bytes(self, g: Group) -> int:
        if self.exact:
            return dict(self.exact).get((g.kind, g.layer if g.kind == "layer" else None), 0) + g.buffer_bytes
        other = DTYPE_BYTES[self.other_dtype]
        return int(g.linear_params * self.weight_bytes + g.linear_rows * self.row_bytes
                   + (g.params - g.linear_params) * other + g.buffer_bytes)


# bitsandbytes: int8 keeps an fp32 scale per output row; nf4/fp4 with double quantization keeps an
# 8-bit absmax per 64 weights plus an fp32 constant per 256 such blocks: 0.5 + 1/64 + 4/16384 bytes.
FOUR_BIT = 0.5 + 1 / 64 + 4 / (64 * 256)


NATIVE = " (file)"   # a scheme name ending so holds the weights as the file does (lean decoder)
NATIVE_QUANTS = ("auto", "none", "q8")   # --quant values that keep a file's own weights (q8: int8 activations)


def file_scheme(shape: Shape) -> Scheme:
    """The weights exactly as the model file holds them, mapped and read by specx's lean decoder: a GGUF's
    blocks (Q4_K, Q6_K, …) or a safetensors folder's BF16/F16/F32; each group priced at its bytes in the file."""
    return Scheme(shape.file_format + NATIVE, 0.0, "float32", device="cpu", exact=shape.file_bytes)


def is_native(name: str) -> bool:
    return name.endswith(NATIVE)


def bnb_scheme(quant: str, compute: str) -> Scheme:
    if quant == "int8":
        return Scheme("int8", 1.0, compute, row_bytes=4, device="cuda", lossy=True)
    return Scheme(quant, FOUR_BIT, compute, device="cuda", lossy=True)


def plain(dtype: str) -> Scheme:
    return Scheme(dtype, DTYPE_BYTES[dtype], dtype)


# fbgemm's packed int8 weights keep, per output row, a float scale, an int32 zero point and an int32
# column offset.
INT8DYN_ROW_BYTES = 12


def int8dyn_scheme(shape: Shape) -> Scheme:
    """A drafter's int8dyn layers (qlinear.DynInt8Linear): int8 weights, except the layers that narrow
    their input (an MLP's down projection, hidden × intermediate per layer), which keep fp16; priced
    per weight as the mean of the two over the decoder layers' linears."""
    linear = sum(g.linear_params for g in shape.groups if g.kind == "layer")
    down = shape.layers * shape.hidden * shape.intermediate if not shape.experts else 0
    share = min(down / linear, 1.0) if linear else 0.0
    return Scheme("int8dyn", 1.0 + share, "float32", row_bytes=INT8DYN_ROW_BYTES, device="cpu", lossy=True)


# ---- configs without weights ----------------------------------------------------------------

def load_config(source):
    """The transformers config of a resolved Source: config.json, or the GGUF header."""
    from transformers import AutoConfig

    if source.kind == "hf":
        return AutoConfig.from_pretrained(source.path, trust_remote_code=False)
    try:
        return gguf_config(source.path)   # the header alone: no hashing, no tensor data
    except (KeyError, TypeError, ValueError):
        pass                              # an unusual header: ask transformers' own (slower) reader
    try:
        return AutoConfig.from_pretrained(source.path.parent, gguf_file=source.path.name, trust_remote_code=False)
    except (ValueError, OSError, KeyError) as e:
        raise ModelUnavailable(f"cannot read the config of {source.name}: {e}") from None


def gguf_config(path: Path):
    """A config from the GGUF header, mapped the way transformers maps it (without its slow reader)."""
    from transformers import AutoConfig
    from transformers.integrations.ggml import GGUF_CONFIG_DEFAULTS_MAPPING, GGUF_CONFIG_MAPPING

    from ..models.gguf_check import _scan

    header = _scan(path)
    meta, tensors = header["meta"], dict(header["tensors"])
    arch = meta["general.architecture"]
    model_type = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gemma3": "gemma3_text"}.get(arch, arch)
    mapping = GGUF_CONFIG_MAPPING.get(model_type.removesuffix("_text"), GGUF_CONFIG_MAPPING.get(arch))
    if mapping is None:
        raise ModelUnavailable(f"{Path(path).name}: transformers cannot load GGUF architecture {arch!r}")
    values = dict(GGUF_CONFIG_DEFAULTS_MAPPING.get(model_type, {}))
    for key, name in mapping.items():
        if name and f"{arch}.{key}" in meta:
            values[name] = meta[f"{arch}.{key}"]
    values["tie_word_embeddings"] = "output.weight" not in tensors
    if "token_embd.weight" in tensors and values.get("hidden_size"):
        values["vocab_size"] = tensors["token_embd.weight"] // values["hidden_size"]
    return AutoConfig.for_model(model_type, **values)


def shape_of(config, name: str = "") -> Shape:
    """Build the model on the meta device and group its parameters for placement."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    with init_empty_weights(include_buffers=False), torch.device("cpu"):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    n_experts = int(getattr(text, "num_local_experts", None) or getattr(text, "num_experts", None) or 0)
    groups = tuple(_groups(model))
    return Shape(name or text.model_type, text.model_type, groups, text.num_hidden_layers,
                 getattr(text, "num_key_value_heads", None) or heads, head_dim, text.hidden_size,
                 int(getattr(text, "moe_intermediate_size", None) or getattr(text, "intermediate_size", 0) or 0),
                 text.vocab_size, int(getattr(text, "max_position_embeddings", None) or 2048),
                 any(g.kind == "head" and g.params == 0 for g in groups), n_experts,
                 int(getattr(text, "num_experts_per_tok", 0) or 0) if n_experts else 0,
                 _head_weight(model))


def _head_weight(model) -> int:
    import torch

    head = model.get_output_embeddings()
    return head.weight.numel() if isinstance(head, torch.nn.Linear) else 0


def fastpath_copy(shape: Shape, dtype: str) -> int:
    """Extra CPU bytes of specx's float32 fast path. rowgemm uses the weights where they are: none.
    oneDNN's packed linears replace the originals (whose memory is returned: fastpath.own_memory),
    except a head tied to the embeddings: the embedding table stays for lookups and the head gets its
    own packed float32 copy. A drafter's int8dyn head is likewise its own int8 copy."""
    from ..cpu.fastpath import prepacks

    head = shape.head_weight or shape.vocab * shape.hidden
    if dtype == "int8dyn" and shape.tied:
        return head + INT8DYN_ROW_BYTES * shape.vocab
    if dtype != "float32" or not shape.tied or not prepacks():
        return 0
    return 4 * head


def shape_for(source) -> Shape:
    """Shape of a resolved Source (reads only its config)."""
    from dataclasses import replace

    from .mapped import file_dtype

    from ..decoder import support

    info = support.inspect(source.path)
    if source.kind != "hf" and not info.reason and info.config is not None:
        # a GGUF the lean decoder runs is counted from its own header: transformers' model on the meta device
        # cost 1.26 s and 96 MiB of RSS for the fixture 1.5B (benchmarks/results/2026-11-26-tails), and the
        # config it needs imports transformers' model utilities
        return replace(shape_of_file(info, source.name), file_dtype=file_dtype(source, None),
                       file_bytes=info.groups, file_format=info.format)
    config = load_config(source)
    shape = replace(shape_of(config, source.name), file_dtype=file_dtype(source, config))
    if info.reason:
        return shape
    return replace(shape, file_bytes=info.groups, file_format=info.format)


# transformers' model_type of a GGUF architecture the lean decoder runs, where the two differ
HF_MODEL_TYPE = {"gemma3": "gemma3_text"}


def shape_of_file(info, name: str = "") -> Shape:
    """The Shape `shape_of` builds, from a GGUF's header (decoder/support.FileInfo: its DecoderConfig and its
    tensor table) for an architecture specx's decoder runs: transformers' module paths and run order
    (embeddings, rotary tables, the layers, head, final norm), each group's parameters as the file counts
    them. Buffers, which no file holds, are the rotary tables' inverse frequencies (and Gemma's embedding
    scale)."""
    c = info.config
    counts = dict(info.counts)
    head_dim, gemma = c.head_dim, c.family == "gemma3"
    tied = c.tie_word_embeddings or ("head", None) not in counts
    rope_buffers = 2 * (2 if gemma else 1) * (head_dim // 2) * 4   # inv_freq and its original, per rope table
    params = lambda key: counts.get(key, (0, 0, 0))[0]   # noqa: E731
    groups = [Group("model.embed_tokens", "embed", params(("embed", None)), 0, 0, 4 if gemma else 0,
                    ("model.embed_tokens",)),
              Group("model.rotary_emb", "other", 0, 0, 0, rope_buffers, ("model.rotary_emb",))]
    for i in range(c.num_hidden_layers):
        total, linear, rows = counts.get(("layer", i), (0, 0, 0))
        groups.append(Group(f"model.layers.{i}", "layer", total, linear, rows, 0, (f"model.layers.{i}",), i))
    groups += [Group("lm_head", "head", 0 if tied else params(("head", None)), 0, 0, 0, ("lm_head",)),
               Group("model.norm", "norm", params(("norm", None)), 0, 0, 0, ("model.norm",))]
    model_type = HF_MODEL_TYPE.get(c.family, c.family)
    return Shape(name or model_type, model_type, tuple(groups), c.num_hidden_layers, c.num_key_value_heads,
                 head_dim, c.hidden_size, c.intermediate_size, c.vocab_size, c.max_position_embeddings, tied,
                 head_weight=c.vocab_size * c.hidden_size)


def _layers_list(model):
    """(path, ModuleList) of the decoder layers: the list whose items are the no-split layer class."""
    import torch

    no_split = set(getattr(model, "_no_split_modules", None) or ())
    best = None
    for path, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module):
            if type(module[0]).__name__ in no_split:
                return path, module
            best = best or (path, module)
    return best


def _counts(module, skip: str | None = None) -> tuple[int, int, int, int]:
    """(params, linear params, linear rows, buffer bytes) of a module, optionally without a submodule."""
    import torch

    params = linear = rows = buffers = 0
    for path, sub in module.named_modules():
        if skip and (path == skip or path.startswith(skip + ".")):
            continue
        own = list(sub.parameters(recurse=False))
        params += sum(p.numel() for p in own)
        buffers += sum(b.numel() * b.element_size() for b in sub.buffers(recurse=False))
        if isinstance(sub, torch.nn.Linear):
            linear += sub.weight.numel()
            rows += sub.out_features
    return params, linear, rows, buffers


def _experts_path(layer) -> str | None:
    """The fused experts submodule of an MoE layer (relative path), if any."""
    for path, sub in layer.named_modules():
        if path.endswith("experts") and any(p.dim() == 3 for p in sub.parameters(recurse=False)):
            return path
    return None


def _layer_groups(prefix: str, index: int, layer) -> list[Group]:
    experts = _experts_path(layer)
    params, linear, rows, buffers = _counts(layer, skip=experts)
    if experts is None:
        return [Group(prefix, "layer", params, linear, rows, buffers, (prefix,), index)]
    parts = _siblings(layer, experts)
    e_params, _, _, e_buffers = _counts(layer.get_submodule(experts))
    return [Group(prefix, "layer", params, linear, rows, buffers, tuple(f"{prefix}.{p}" for p in parts), index),
            Group(f"{prefix}.{experts}", "experts", e_params, 0, 0, e_buffers, (f"{prefix}.{experts}",), index)]


def _siblings(root, path: str) -> list[str]:
    """Disjoint module paths covering `root` except `path`: the siblings along the way down."""
    out, here, prefix = [], root, ""
    for step in path.split("."):
        out += [prefix + name for name, _ in here.named_children() if name != step]
        here, prefix = getattr(here, step), prefix + step + "."
    return out


def _groups(model) -> list[Group]:
    """Top-level pieces (embeddings, norm, head, others) and one group per decoder layer, in run order."""
    layers_path, layers = _layers_list(model)
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    text = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    tied = head is not None and (head.weight is emb.weight or bool(getattr(text, "tie_word_embeddings", False)))
    groups, head_groups = [], []
    for path in _siblings(model, layers_path):
        sub = model.get_submodule(path)
        params, _, _, buffers = _counts(sub)
        if sub is head:
            head_groups.append(Group(path, "head", 0 if tied else params, 0, 0, buffers, (path,)))
            continue
        kind = "embed" if sub is emb else "norm" if "norm" in path.rsplit(".", 1)[-1] else "other"
        (head_groups if kind == "norm" else groups).append(Group(path, kind, params, 0, 0, buffers, (path,)))
    for i, layer in enumerate(layers):
        groups += _layer_groups(f"{layers_path}.{i}", i, layer)
    return groups + head_groups
