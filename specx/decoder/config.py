"""The shape of a decoder (DecoderConfig) for the families the lean decoder runs: Llama (SmolLM2, Llama 3.x),
Mistral, Qwen2/2.5, Qwen3 and Gemma 3 (text), read from a GGUF file's metadata or a transformers config.

Attribute names follow transformers' configs (`hidden_size`, `num_hidden_layers`, …) so code that reads
`lm.model.config` works on either runtime. Any other architecture raises UnsupportedArchitecture: the
caller then runs transformers' own model."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Mapping

from ..errors import ModelUnavailable

# Rows a forward runs through the layers at once: a longer prompt's pass runs in chunks of this many, so its
# buffers (and attention's score rows) are those of a chunk, not of the whole prompt. A row's logits are the
# same bits whatever rows share its call, so chunks change nothing else; 512 rows keep the kernels' weight
# reads a small share of a chunk's arithmetic.
PROMPT_CHUNK = 512
# attention.c's SCORE_TILE_BYTES (tests hold the two equal): the score rows a kv-head task of a prompt chunk holds
# at once, for the memory plan.
SCORE_TILE_BYTES = 512 * 1024

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma3")
HF_TYPES = {"llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "gemma3_text": "gemma3"}
GGUF_ARCHS = ("llama", "qwen2", "qwen3", "gemma3")
ACTIVATIONS = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh"}
# llama.cpp (src/llama-model.cpp) fixes two Gemma 3 facts its GGUF files do not carry: every 6th layer
# attends globally, the others over a sliding window, and those local layers rotate with base 10,000.
GEMMA3_PATTERN, GEMMA3_LOCAL_THETA = 6, 10_000.0


class UnsupportedArchitecture(ModelUnavailable):
    """A model the lean decoder does not implement; transformers' own model still runs it."""

    default_hint = "specx runs this model through transformers instead"


@dataclass(frozen=True)
class Rope:
    """Rotary embedding of one kind of layer: angle = position / scale * inv_freq / factors[i]."""

    theta: float
    scale: float = 1.0                          # linear scaling ("linear" rope type, GGUF rope.scaling.factor)
    factors: tuple[float, ...] | None = None    # per-frequency divisors: llama3 scaling, GGUF rope_freqs.weight


@dataclass(frozen=True)
class DecoderConfig:
    """Everything the decoder's arithmetic depends on (shapes, norms, rotary, attention windows)."""

    family: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    max_position_embeddings: int
    rope: Rope
    rope_local: Rope | None = None              # Gemma 3's sliding-window layers
    rope_adjacent: bool = False                 # rotate pairs (2i, 2i+1): llama.cpp's order in llama-arch GGUFs
    sliding_window: int | None = None           # a sliding layer's query sees its last `sliding_window` keys
    sliding_layers: tuple[bool, ...] = ()
    attn_scale: float = 0.0                     # multiplies q·k; 0 means 1/sqrt(head_dim)
    embed_scale: float = 1.0                    # Gemma: embeddings times sqrt(hidden_size)
    qk_norm: bool = False                       # Qwen3, Gemma 3: RMSNorm of each head's q and k
    sandwich_norms: bool = False                # Gemma 3: norms after attention and after the MLP too
    norm_plus_one: bool = False                 # HF Gemma stores w and scales by 1 + w (its GGUF stores 1 + w)
    hidden_act: str = "silu"
    tie_word_embeddings: bool = False

    @property
    def q_size(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_key_value_heads * self.head_dim

    @property
    def scale(self) -> float:
        return self.attn_scale or self.head_dim ** -0.5

    def is_sliding(self, layer: int) -> bool:
        return bool(self.sliding_layers) and self.sliding_layers[layer]

    def layer_rope(self, layer: int) -> Rope:
        return self.rope_local if self.rope_local is not None and self.is_sliding(layer) else self.rope


def from_gguf(meta: Mapping[str, object], shapes: Mapping[str, tuple[int, ...]],
              rope_freqs=None) -> DecoderConfig:
    """From a GGUF file's metadata and tensor shapes (ggml order); `rope_freqs`: the file's rope_freqs.weight."""
    arch = str(meta.get("general.architecture", ""))
    if arch not in GGUF_ARCHS:
        raise UnsupportedArchitecture(f"the lean decoder does not run GGUF architecture {arch!r}")

    def key(name: str, default=None):
        value = meta.get(f"{arch}.{name}", default)
        if value is None:
            raise UnsupportedArchitecture(f"GGUF metadata lacks {arch}.{name}")
        if not isinstance(value, (numbers.Number, str)):
            raise UnsupportedArchitecture(f"{arch}.{name} varies by layer; the lean decoder needs one value")
        return value

    hidden, heads = int(key("embedding_length")), int(key("attention.head_count"))
    head_dim = int(key("attention.key_length", hidden // heads))
    if head_dim != int(key("attention.value_length", head_dim)) or head_dim != int(key("rope.dimension_count",
                                                                                        head_dim)):
        raise UnsupportedArchitecture("keys and values of different sizes, or a partial rotary, are not supported")
    layers = int(key("block_count"))
    gemma = arch == "gemma3"
    rope = Rope(float(key("rope.freq_base", 10_000.0)), _gguf_rope_scale(meta, arch),
                tuple(float(f) for f in rope_freqs) if rope_freqs is not None else None)
    return DecoderConfig(
        family=arch, vocab_size=int(shapes["token_embd.weight"][1]), hidden_size=hidden,
        intermediate_size=int(key("feed_forward_length")), num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=int(key("attention.head_count_kv", heads)), head_dim=head_dim,
        rms_norm_eps=float(key("attention.layer_norm_rms_epsilon")),
        max_position_embeddings=int(key("context_length")), rope=rope,
        rope_local=Rope(GEMMA3_LOCAL_THETA) if gemma else None, rope_adjacent=arch == "llama",
        sliding_window=int(key("attention.sliding_window")) if gemma else None,
        sliding_layers=tuple((i + 1) % GEMMA3_PATTERN != 0 for i in range(layers)) if gemma else (),
        attn_scale=_gguf_gemma3_scale(hidden, heads, head_dim, layers) if gemma else 0.0,
        embed_scale=math.sqrt(hidden) if gemma else 1.0,
        qk_norm="blk.0.attn_q_norm.weight" in shapes, sandwich_norms=gemma,
        hidden_act="gelu_tanh" if gemma else "silu", tie_word_embeddings="output.weight" not in shapes)


def _gguf_rope_scale(meta: Mapping[str, object], arch: str) -> float:
    kind = str(meta.get(f"{arch}.rope.scaling.type", "none"))
    if kind == "none":
        return 1.0
    if kind != "linear":
        raise UnsupportedArchitecture(f"rope scaling {kind!r} is not supported by the lean decoder")
    return float(meta.get(f"{arch}.rope.scaling.factor", 1.0))


def _gguf_gemma3_scale(hidden: int, heads: int, head_dim: int, layers: int) -> float:
    """llama.cpp's rule for Gemma 3 files (which lack query_pre_attn_scalar): the 27B model (62 layers)
    scales by 1/sqrt(hidden/heads), every other size by 1/sqrt(head_dim)."""
    return (hidden // heads if layers == 62 else head_dim) ** -0.5


def from_hf(config) -> DecoderConfig:
    """From a transformers config object (AutoConfig.from_pretrained of the model folder)."""
    family = HF_TYPES.get(getattr(config, "model_type", ""))
    if family is None:
        raise UnsupportedArchitecture(f"the lean decoder does not run {config.model_type!r} models")
    act = ACTIVATIONS.get(getattr(config, "hidden_act", None) or getattr(config, "hidden_activation", ""))
    unsupported = [name for name in ("attn_logit_softcapping", "final_logit_softcapping",
                                     "use_bidirectional_attention", "mlp_bias") if getattr(config, name, None)]
    if act is None or unsupported:
        raise UnsupportedArchitecture(f"{config.model_type} with {unsupported or 'this activation'} is not supported")
    hidden, heads, layers = config.hidden_size, config.num_attention_heads, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    gemma = family == "gemma3"
    params = config.rope_parameters
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    sliding = tuple(t == "sliding_attention" for t in types) if types else (window is not None,) * layers
    return DecoderConfig(
        family=family, vocab_size=config.vocab_size, hidden_size=hidden, intermediate_size=config.intermediate_size,
        num_hidden_layers=layers, num_attention_heads=heads,
        num_key_value_heads=getattr(config, "num_key_value_heads", None) or heads, head_dim=head_dim,
        rms_norm_eps=config.rms_norm_eps, max_position_embeddings=config.max_position_embeddings,
        rope=_hf_rope(params["full_attention"] if gemma else params, head_dim),
        rope_local=_hf_rope(params["sliding_attention"], head_dim) if gemma else None,
        sliding_window=window if any(sliding) else None, sliding_layers=sliding if any(sliding) else (),
        attn_scale=config.query_pre_attn_scalar ** -0.5 if gemma else 0.0,
        embed_scale=math.sqrt(hidden) if gemma else 1.0, qk_norm=family in ("qwen3", "gemma3"),
        sandwich_norms=gemma, norm_plus_one=gemma, hidden_act=act,
        tie_word_embeddings=bool(getattr(config, "tie_word_embeddings", False)))


def _hf_rope(params: Mapping[str, object], head_dim: int) -> Rope:
    kind = params.get("rope_type", "default")
    if params.get("partial_rotary_factor", 1.0) != 1.0:
        raise UnsupportedArchitecture("a partial rotary embedding is not supported by the lean decoder")
    theta = float(params["rope_theta"])
    if kind == "default":
        return Rope(theta)
    if kind == "linear":
        return Rope(theta, float(params["factor"]))
    if kind == "llama3":
        return Rope(theta, factors=llama3_factors(theta, head_dim, params))
    raise UnsupportedArchitecture(f"rope scaling {kind!r} is not supported by the lean decoder")


def llama3_factors(theta: float, head_dim: int, params: Mapping[str, object]) -> tuple[float, ...]:
    """Llama 3.1's frequency divisors (transformers' _compute_llama3_parameters, as divisors of inv_freq):
    low frequencies slowed by `factor`, high ones kept, a smooth blend between."""
    factor, low, high = float(params["factor"]), float(params["low_freq_factor"]), float(params["high_freq_factor"])
    old = float(params["original_max_position_embeddings"])
    out = []
    for i in range(0, head_dim, 2):
        wavelen = 2 * math.pi * theta ** (i / head_dim)
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return tuple(out)
