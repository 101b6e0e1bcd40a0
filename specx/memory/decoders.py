"""Which of specx's decoders runs a model as its file holds it (the lean CPU decoder, the GPU block kernels),
and how a plan's sentences name the weights it chose."""
from __future__ import annotations

from .footprint import BLOCKS as BLOCKS_SUFFIX, NATIVE_QUANTS, REENCODED, Scheme, Shape, is_blocks, is_native
from .planner import CPU, GPU


def native(shape: Shape, fast: str, dtype: str, quant: str) -> bool:
    """Whether a model runs on specx's lean decoder, its weights as the file holds them: on the CPU, a
    file the decoder reads (Shape.file_bytes), no dtype asked for and no other weight precision."""
    return fast == CPU and bool(shape.file_bytes) and dtype == "auto" and quant in NATIVE_QUANTS


def on_blocks(shape: Shape, fast: str, dtype: str, quant: str, simulated: bool) -> bool:
    """Whether a GGUF runs on a GPU in its own blocks (gpu/blocks.py, on specx's CUDA decoder): a file that
    decoder runs (Shape.gpu_bytes), no other weight precision asked for, a half-precision compute dtype, and
    Triton there to compile the block kernels for an Ampere or newer GPU (a simulated GPU budget assumes it)."""
    if fast != GPU or not shape.gpu_bytes or quant not in ("auto", "none"):
        return False
    if dtype not in ("auto", "bfloat16", "float16"):
        return False
    from ..gpu.qmatmul import available

    return simulated or not available(0)


def weights_phrase(scheme: Scheme) -> str:
    """How a plan's sentences name a scheme's weights."""
    if is_blocks(scheme.name):
        return f"{scheme.name.removesuffix(BLOCKS_SUFFIX)} as the file holds them (specx's GPU block kernels)"
    if is_native(scheme.name):
        held = scheme.name.removesuffix(' (file)')
        return f"{held} {'from the file' if REENCODED in held else 'as the file holds it'} (specx's lean decoder)"
    if scheme.name == "int8dyn":
        return "int8 weights and activations (fp16 where a layer narrows its input)"
    return scheme.name if scheme.name == scheme.other_dtype else f"{scheme.name} weights"
