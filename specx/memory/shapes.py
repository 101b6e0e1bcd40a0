"""A model's Shape from its config alone, without its weights.

The model is built on the meta device (no weights, no memory), so every architecture transformers
implements is counted exactly, tied embeddings once, and MoE experts (fused 3-D tensors in
transformers 5) as groups of their own. A GGUF that specx's lean decoder runs is counted from its own
tensor table instead (shape_of_file), which needs no transformers model.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import ModelUnavailable
from .footprint import Group, Shape

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

    from ..models.gguf_check import scan_gguf

    header = scan_gguf(path)
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
                 _head_weight(model), heads=heads)


def _head_weight(model) -> int:
    import torch

    head = model.get_output_embeddings()
    return head.weight.numel() if isinstance(head, torch.nn.Linear) else 0


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
                       file_bytes=info.groups, file_format=info.format, gpu_bytes=info.gpu_groups,
                       q4_bytes=info.q4_groups)
    config = load_config(source)
    shape = replace(shape_of(config, source.name), file_dtype=file_dtype(source, config))
    if info.reason:
        return shape
    return replace(shape, file_bytes=info.groups, file_format=info.format, gpu_bytes=info.gpu_groups,
                   q4_bytes=info.q4_groups)


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
                 head_weight=c.vocab_size * c.hidden_size, heads=c.num_attention_heads)


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
