"""What a GGUF file of a given type will hold, from a model's config alone (before it is downloaded).

A GGUF "file type" (Q4_K_M, Q8_0, …) names a mixture, not one block format: llama.cpp's quantizer
(`llama_tensor_get_type`) gives each tensor its own block type. The rules priced here are the ones that move
the size: the output matrix (or the embedding table when the head is tied to it) takes Q6_K unless the file's
type is larger; the _M mixtures give half the layers' V and FFN-down matrices Q6_K (`use_more_bits`); a
matrix whose rows are not a whole number of 256-value blocks falls back to a 32-value type; vectors stay F32.
Each block type is priced at its own bytes per block (the gguf package's GGML_QUANT_SIZES: Q4_K 144 bytes per
256 values = 4.5 bits per weight). Once the file is local, its header prices it exactly (decoder/support.py).
"""
from __future__ import annotations

# file type -> (block type of most matrices, block type of the "more bits" V and FFN-down matrices)
MIXTURES = {
    "Q4_K_M": ("Q4_K", "Q6_K"),
    "Q5_K_M": ("Q5_K", "Q6_K"),
    "Q4_K_S": ("Q4_K", "Q4_K"),
    "Q5_K_S": ("Q5_K", "Q5_K"),
    "Q3_K_M": ("Q3_K", "Q4_K"),
    "Q3_K_L": ("Q3_K", "Q5_K"),
    "Q3_K_S": ("Q3_K", "Q3_K"),
}
HEAD_TYPE = "Q6_K"   # the output matrix's type in every mixture smaller than it
# a K-type matrix whose rows do not split into 256-value blocks takes this 32-value type instead
FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0",
            "IQ4_XS": "IQ4_NL"}   # IQ4_NL: IQ4_XS's 4-bit grid in 32-value blocks
MORE_BITS = ("v_proj", "down_proj")   # transformers' names of llama.cpp's attn_v and ffn_down


def block_type(name: str):
    """The gguf package's GGMLQuantizationType of a block type name, or None."""
    from gguf import GGMLQuantizationType

    return GGMLQuantizationType.__members__.get(name.upper())


def bits_per_weight(block: str) -> float:
    """A block type's own size: bits per weight, scales included (Q4_K 4.5, Q6_K 6.5625, Q8_0 8.5)."""
    from gguf import GGML_QUANT_SIZES

    values, nbytes = GGML_QUANT_SIZES[block_type(block)]
    return 8 * nbytes / values


def file_type_name(value: int) -> str:
    """A header's general.file_type number as its name (15 -> Q4_K_M), "" when unknown."""
    from gguf import LlamaFileType

    try:
        return LlamaFileType(value).name.removeprefix("MOSTLY_")
    except ValueError:
        return ""


def known(file_type: str) -> bool:
    """Whether a file type name can be priced (a mixture above, or a single block type such as Q8_0)."""
    return file_type.upper() in MIXTURES or block_type(file_type) is not None


def types_of(file_type: str) -> tuple[str, str]:
    """(base block type, more-bits block type) of a file type name."""
    name = file_type.upper()
    return MIXTURES.get(name, (name, name))


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's choice of the layers whose V and FFN-down matrices get more bits: the first and last
    eighth, and every third layer between them (half the layers in all)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(file_type: str, role: str, layer: int | None, n_layers: int, cols: int) -> str:
    """The block type a matrix of `cols` input values gets in a file of `file_type`.
    role: "head" (the output matrix, or a tied embedding table), "embed", or a layer matrix's name."""
    base, more = types_of(file_type)
    kind = base
    if role == "head" and bits_per_weight(base) < bits_per_weight(HEAD_TYPE):
        kind = HEAD_TYPE
    elif layer is not None and role.endswith(MORE_BITS) and use_more_bits(layer, n_layers):
        kind = more
    values = _block_values(kind)
    return FALLBACK.get(kind, "F16") if cols % values else kind


def _block_values(block: str) -> int:
    from gguf import GGML_QUANT_SIZES

    return GGML_QUANT_SIZES[block_type(block)][0]


def estimate(config, file_type: str) -> tuple[dict, str]:
    """({(kind, layer): bytes}, "Q4_K/Q6_K") for a GGUF of `file_type` holding the model of `config`,
    keyed as decoder/support.py keys a local file's groups. Matrices as the rules above price them,
    vectors (norms, biases) in F32. Builds the model on the meta device (no weights)."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    from ..decoder.support import _group_of

    with init_empty_weights(include_buffers=False), torch.device("cpu"):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_layers = text.num_hidden_layers
    head = model.get_output_embeddings()
    tied = head is None or head.weight is model.get_input_embeddings().weight \
        or bool(getattr(text, "tie_word_embeddings", False))   # the file then holds no output matrix
    groups: dict[tuple, int] = {}
    kinds: dict[str, int] = {}
    for name, param in model.named_parameters(remove_duplicate=True):
        key = _group_of(name)
        if key[0] == "head" and tied:
            continue   # one table, priced once: as the embedding, in the head's type
        if param.dim() < 2:
            kind, nbytes = "F32", 4 * param.numel()
        else:
            role = "head" if key[0] == "head" or (key[0] == "embed" and tied) else name.removesuffix(".weight")
            kind = tensor_type(file_type, role, key[1], n_layers, param.shape[-1])
            nbytes = int(param.numel() * bits_per_weight(kind) / 8)
            kinds[kind] = kinds.get(kind, 0) + nbytes
        groups[key] = groups.get(key, 0) + nbytes
    fmt = "/".join(k for k, _ in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return groups, fmt
