"""What each option may be (numbers in range, names known), checked the same way wherever it comes from: a flag, a SPECX_*
variable, the config file, a preset, the Python API. No torch here: the CLI checks options before any
heavy import. Every test is written so that NaN fails it (a comparison with NaN is false)."""
from __future__ import annotations

import math
import re

from ..errors import UsageError

WEIGHTS = ("auto", "none", "fp16", "int8", "int4", "int8dyn")   # CPU weight precisions (cpu/fastpath.py);
                                                                # int8dyn: drafters only (qlinear.DynInt8Linear)
GPU_ONLY_QUANT = ("nf4", "fp4")                                 # bitsandbytes on CUDA: the memory plan checks them
DRAFT_LEAN_QUANT = ("q4",)   # a drafter on the lean decoder: its wider layers re-encoded to Q4_0 (decoder/reencode.py)
LEAN_QUANT = ("q8",)   # specx's lean decoder on a GGUF file: int8 activations (cpu/quant.py);
                       # `none` there keeps float32 activations (exact)
DTYPES = ("auto", "float32", "bfloat16", "float16")
MAX_K = 64   # tokens drafted per round at most: past this, verify forwards cost more than a draft can win
MAX_TREE = 16   # token-tree nodes a verify holds at most: the CPU kernels' cost stays nearly flat up to 16 rows

# option -> (test, what it must be, hint)
LIMITS = {
    "k": (lambda v: 0 <= v <= MAX_K, f"between 0 and {MAX_K}", "try -k 4; -k 0 decodes plainly"),
    "max_tokens": (lambda v: v > 0, "positive", "try -n 256"),
    "temperature": (lambda v: 0 <= v < math.inf, "a finite number ≥ 0", "0 means greedy decoding"),
    "top_p": (lambda v: 0 < v <= 1, "in (0, 1]", "try --top-p 0.9"),
    "top_k": (lambda v: v >= 0, "≥ 0", "0 disables top-k"),
    "confidence": (lambda v: 0 < v < 1, "in (0, 1)", "try --confidence 0.4"),
    "tree": (lambda v: -1 <= v <= MAX_TREE, f"between -1 and {MAX_TREE}",
             "--tree 0 verifies chains, -1 sizes trees by measured costs, N at most N nodes"),
}
WORDS = {"k": "draft tokens", "max_tokens": "max tokens", "top_p": "top-p", "top_k": "top-k",
         "confidence": "the confidence threshold", "tree": "token-tree nodes"}


def check(name: str, value, where: str = "") -> None:
    """Refuse a value out of its option's range (None means unset and passes)."""
    if value is None or name not in LIMITS:
        return
    test, must, hint = LIMITS[name]
    if not test(value):
        what = f"{where}: `{name}`" if where else WORDS.get(name, name)
        raise UsageError(f"{what} must be {must} (got {value})", hint)


# option -> (the names it may take, the flag that sets it)
NAMES = {"quant": (WEIGHTS + GPU_ONLY_QUANT + LEAN_QUANT, "--quant"), "draft_quant": (WEIGHTS + LEAN_QUANT + DRAFT_LEAN_QUANT, "--draft-quant"),
         "dtype": (DTYPES, "--dtype")}


# A GGUF type name (Q4_K_M, Q8_0, IQ4_XS, F16, …): `--quant`/`--draft-quant` then pick a preset's GGUF variant
# (models/variant.py), whose own list is checked once the preset is known.
VARIANT_NAME = re.compile(r"^(I?Q\d(_[A-Z0-9]+)+|B?F16|F32)$", re.I)   # every GGUF type has a "_" part


def is_variant_name(value: str) -> bool:
    """Whether a --quant value names a GGUF variant rather than a runtime precision."""
    return bool(VARIANT_NAME.match(value)) and value.lower() not in {*WEIGHTS, *GPU_ONLY_QUANT, *LEAN_QUANT, *DRAFT_LEAN_QUANT}


def runtime_quant(value: str) -> str:
    """The runtime precision a --quant value asks for: a GGUF variant's weights stay as the file holds them."""
    return "auto" if is_variant_name(value) else value


def check_name(name: str, value: str) -> None:
    """Refuse a name the option does not know (a weight precision, a dtype, or for --quant/--draft-quant a
    GGUF variant's name)."""
    known, flag = NAMES[name]
    if value not in known and not (name != "dtype" and is_variant_name(value)):
        what = "dtype" if name == "dtype" else "weight precision"
        raise UsageError(f"unknown {what} {value!r} for {flag}", f"use one of: {', '.join(known)}"
                         + ("; or a preset's GGUF variant (Q4_K_M, Q8_0, …)" if name != "dtype" else ""))
