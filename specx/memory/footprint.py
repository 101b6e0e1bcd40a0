"""What a model's memory is made of: its parameter groups (Shape, Group), bytes per weight scheme (Scheme),
KV per token, buffers, and what a loaded model costs beyond its tensors. shapes.py builds a Shape from a
model's config or file."""
from __future__ import annotations

from dataclasses import dataclass

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
# A drafter whose file holds its target's vocabulary (models/resolve.same_tokenizer) is given the target's
# tokenizer (models/resolve.load_lm), so beyond its tensors it holds only its file's parsed metadata, whose token
# and merge strings take up to 200 bytes an entry (a GGUF opened alone: 172-198; Gemma 3's 97), and its model's
# objects: the Qwen2.5-Coder 0.5B beside its 1.5B added 30-32 MiB beyond its tensors on specx's decoder
# (benchmarks/results/2026-11-29-plan-pair), 8 MiB plus 200 bytes an entry.
SHARED_RUNTIME_BASE = 8 * 2**20
META_PER_ENTRY = 200


def runtime_overhead(vocab: int, shares_tokenizer: bool = False) -> int:
    """CPU bytes a loaded model holds beyond its tensors, for a vocabulary of `vocab` entries; a drafter that
    `shares_tokenizer` with its target builds none of its own."""
    if shares_tokenizer:
        return SHARED_RUNTIME_BASE + META_PER_ENTRY * max(vocab, 0)
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
    shares_tokenizer: bool = False   # a drafter whose file holds its target's vocabulary: it builds no tokenizer
    gpu_bytes: tuple = ()     # ((kind, layer), bytes) per group as specx's GPU block kernels hold a GGUF's blocks
    q4_bytes: tuple = ()      # ((kind, layer), bytes) per group with the wider layer matrices re-encoded to Q4_0
                              # (a drafter's, decoder/reencode.py)
    heads: int = 0            # query heads (0: unknown, taken as kv_heads)

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
# --quant values that run a file on the lean decoder (q8: int8 activations; q4: a drafter's wider layers re-encoded
# to Q4_0, decoder/reencode.py)
NATIVE_QUANTS = ("auto", "none", "q8", "q4")
REENCODED = " re-encoded to Q4_0"   # in a scheme's name before NATIVE: a drafter's wider layers so (file_scheme)
# The lean decoder's mode per role when not asked (memory/placement.py says why): a drafter's is q4
NATIVE_MODE = {"target": "q8", "drafter": "q4"}


def file_scheme(shape: Shape, reencoded: bool = False) -> Scheme:
    """The weights as the model file holds them, read by specx's lean decoder: a GGUF's blocks (Q4_K, Q6_K, …)
    or a safetensors folder's BF16/F16/F32; each group priced at its bytes in the file, or, `reencoded` (a
    drafter's q4), with its layer matrices wider than Q4_0 at Q4_0's bytes."""
    if reencoded and shape.q4_bytes and shape.q4_bytes != shape.file_bytes:
        return Scheme(shape.file_format + REENCODED + NATIVE, 0.0, "float32", device="cpu", exact=shape.q4_bytes)
    return Scheme(shape.file_format + NATIVE, 0.0, "float32", device="cpu", exact=shape.file_bytes)


def native_mode(role: str, quant: str) -> str:
    """The lean decoder's mode for a role and the --quant asked: none → f32, q8 → q8, q4 → q4 (a drafter's),
    else the role's default (NATIVE_MODE)."""
    return "f32" if quant == "none" else quant if quant in ("q8", "q4") else NATIVE_MODE[role]


def reencodes(draft_quant: str) -> bool:
    """Whether a drafter on the lean decoder re-encodes its wider layers under this --draft-quant."""
    return native_mode("drafter", draft_quant) == "q4"


def is_native(name: str) -> bool:
    return name.endswith(NATIVE)


BLOCKS = " (blocks)"   # a scheme name ending so holds a GGUF's blocks on a GPU (gpu/blocks.py, specx's CUDA decoder)


def blocks_scheme(shape: Shape, compute: str) -> Scheme:
    """A GGUF's matrices kept in their blocks on a GPU (gpu/blocks.py's planes: the file's bytes, plus a byte per
    32 weights for the K-quants' scales), activations and the KV cache in the compute dtype."""
    return Scheme(shape.file_format + BLOCKS, 0.0, compute, device="cuda", exact=shape.gpu_bytes)


def is_blocks(name: str) -> bool:
    return name.endswith(BLOCKS)


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


def fastpath_copy(shape: Shape, dtype: str) -> int:
    """Extra CPU bytes of specx's float32 fast path. rowgemm uses the weights where they are: none.
    oneDNN's packed linears replace the originals (whose memory is returned: fastpath.own_memory),
    except a head tied to the embeddings: the embedding table stays for lookups and the head gets its
    own packed float32 copy. A drafter's int8dyn head is likewise its own int8 copy. specx's decoder (a native
    scheme) uses none of them, and asks no kernel library about them (a GGUF's first run compiles no rowgemm)."""
    from ..cpu.fastpath import prepacks

    head = shape.head_weight or shape.vocab * shape.hidden
    if dtype == "int8dyn" and shape.tied:
        return head + INT8DYN_ROW_BYTES * shape.vocab
    if dtype != "float32" or not shape.tied or not prepacks():
        return 0
    return 4 * head
