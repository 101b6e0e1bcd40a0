"""CPU fast path: how a model's linear layers run, chosen once at load (`--quant`, `--draft-quant`).

`none` keeps the weights as loaded. For float32 on the CPU the linear layers run specx's own kernel
(cpu/rowgemm.c, built once per machine with the system's C compiler), else oneDNN's prepacked
linears. Measured on the 2-core AVX2 dev machine, one 8960×1536 layer (Qwen2.5-Coder-1.5B's MLP):

| rows per call | 1 | 2 | 5 | 9 | 17 | 200 |
|---|---|---|---|---|---|---|
| PyTorch's default GEMM | 3.9 ms | 7.3 ms | 16.3 ms | 18.9 ms | 23.4 ms | 93 ms |
| oneDNN prepacked | 2.7 ms | 5.7 ms | 5.9 ms | 7.1 ms | 11.1 ms | 72 ms |
| specx rowgemm | 2.3 ms | 2.6 ms | 3.1 ms | 4.3 ms | 6.7 ms | 71 ms |

The default GEMM re-packs the weight matrix on every call; oneDNN packs once at load but doubles its
cost from one row to two; rowgemm reads the weights in PyTorch's own layout (no copy) once for every
four rows, so verifying 5 tokens costs 1.3× decoding one instead of 2.2×. Its rows are also exact: a
token's logits are bit for bit the same verified among others as decoded alone (oneDNN: 2e-6 apart).
Where the CPU has AVX-512 it is built with AVX-512VL (blocks of 6 rows, same bits) and prefetches the
weights ahead: whole 1.5B target on the AVX-512 machine, 1 token 186 → 147 ms, 5 tokens 327 → 171 ms
(1.16× one), 17 tokens 558 → 344 ms, prompt of 123 2.44 → 1.80 s.

`fp16` runs on fbgemm or on rowgemm (half-float weights widened to float32 as they are read, float32
arithmetic, rows exact), whichever is faster on this machine (fp16_choice: timed once per machine,
cpu/timed.py; SPECX_KERNELS=rowgemm or fbgemm decides instead). Whole 1.5B target in fp16, context
123, paired (benchmarks/row_kernel.py --weights fp16), fbgemm / rowgemm: on an AVX-512 machine
(benchmarks/results/2026-11-25-guard) 103 / 127 ms for 1 token, 127 / 233 ms for 5, prompt pass
1.77 / 2.37 s; on a Zen 1 machine (AVX2, rowgemm without prefetching; 2026-11-25-zen1, 5 alternating
repeats) 257 / 272 ms for 1 token, 395 / 447 ms for 5, 1114 / 1038 ms for 17, prompt pass 6.43 / 5.18 s.
The one-layer timing picks fbgemm on both, as decoding and verifying a few tokens do.

`fp16`, `int8`, `int4` store the weights in fewer bytes (qlinear.py says which kernels and why): they
are exact for speculation (speculative output = that model's plain output) but change the model
itself, so the target keeps its loaded precision unless asked. The drafter's precision never changes
the output, so `auto` gives the drafter the fastest kernel this CPU has: int8 weights and activations
(`int8dyn`, fbgemm's dynamic linear), which a target may not take (a row's result depends on the batch).
"""
from __future__ import annotations

import os

import torch

from . import rowgemm, timed
from . import qlinear
from ..errors import UsageError
from ..state.limits import WEIGHTS

DISABLE_ENV = "SPECX_KERNELS"  # SPECX_KERNELS=reference keeps PyTorch's default linear layers,
                               # SPECX_KERNELS=onednn skips specx's own float32 kernel,
                               # SPECX_KERNELS=rowgemm / fbgemm runs fp16 weights there (else the faster)


def check(weights: str) -> str:
    if weights not in WEIGHTS:
        raise UsageError(f"unknown weight precision {weights!r}", f"use one of: {', '.join(WEIGHTS)}")
    return weights


def usable(weights: str) -> bool:
    """Whether this machine can run that weight precision on the CPU."""
    return weights == "none" or qlinear.usable(weights) or (weights == "fp16" and row_kernel())


def choose(weights: str, role: str) -> str:
    """Resolve `auto`: the target keeps its weights (exact), the drafter gets int8dyn where fbgemm exists
    (fixture Qwen pair, float32 target, 48 tokens, 2 paired repeats: 1.79× plain on code vs 1.52× with
    an fp16 drafter, math 1.21× vs 0.96×, chat 1.02× vs 0.96×, summarisation 0.89× vs 0.86×, rewrite
    1.67× vs 1.79×; every output equal to plain decoding)."""
    check(weights)
    if weights in qlinear.DRAFT_ONLY and role != "drafter":
        raise UsageError(f"{weights} quantizes activations per forward, so the target's results would depend on "
                         "how many tokens it verifies at once", "use it for the drafter (--draft-quant "
                         f"{weights}); the target takes fp16, int8 or int4")
    if weights != "auto":
        if not usable(weights):
            raise UsageError(f"this PyTorch build has no CPU kernel for {weights} weights",
                             "use --quant none (or fp16 where fbgemm is available)")
        return weights
    if role == "drafter" and os.environ.get(DISABLE_ENV, "").lower() != "reference" and usable("int8dyn"):
        return "int8dyn"
    return "none"


def _on_cpu(model) -> bool:
    return next(model.parameters()).device.type == "cpu"


def available(model) -> bool:
    """The float32 fast path (rowgemm, else oneDNN prepacking) applies to float32 models on the CPU."""
    if os.environ.get(DISABLE_ENV, "").lower() == "reference":
        return False
    if not (row_kernel() or torch.backends.mkldnn.is_available()):
        return False
    param = next(model.parameters())
    return param.device.type == "cpu" and param.dtype == torch.float32


def row_kernel() -> bool:
    """Whether float32 linears run specx's rowgemm (built here, not turned off by SPECX_KERNELS)."""
    return os.environ.get(DISABLE_ENV, "").lower() not in ("reference", "onednn") and rowgemm.available()


def prepacks() -> bool:
    """Whether a float32 model on the CPU gets oneDNN's prepacked linears, which copy every weight
    into ordinary memory (own_memory); rowgemm and PyTorch's default layers use them where they are."""
    return (os.environ.get(DISABLE_ENV, "").lower() != "reference" and not row_kernel()
            and torch.backends.mkldnn.is_available())


class RowLinear(torch.nn.Module):
    """nn.Linear through cpu/rowgemm: the same weight tensor (no copy), or its half-float copy for
    `fp16`; rows exact and cheap either way."""

    def __init__(self, linear: torch.nn.Linear, half: bool = False):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        if half:   # a new tensor: a head tied to the embeddings leaves the embedding table as it was
            self.weight = torch.nn.Parameter(linear.weight.detach().half().contiguous(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rowgemm.linear(x, self.weight, self.bias)   # reads the tensors' memory: no autograd here

    def extra_repr(self) -> str:
        weights = "fp16 " if self.weight.dtype == torch.float16 else ""
        return f"in={self.in_features}, out={self.out_features}, kernel=specx rowgemm {weights}".rstrip()


def row_linears(model, half: bool = False) -> int:
    """Replace every float32 nn.Linear by RowLinear (with half-float weights when `half`), in place;
    returns how many."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                if not child.weight.is_contiguous() and not half:
                    child.weight.data = child.weight.data.contiguous()
                setattr(parent, name, RowLinear(child, half))
                swapped += 1
    return swapped


def prepack_linears(model) -> int:
    """Replace every nn.Linear by oneDNN's prepacked linear, in place; returns how many."""
    from torch.utils.mkldnn import MkldnnLinear

    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear:
                with torch.no_grad():
                    setattr(parent, name, MkldnnLinear(child, torch.float32))
                swapped += 1
    return swapped


_timed: dict[str, timed.Choice] = {}


def fp16_choice() -> timed.Choice | None:
    """Where fp16 weights run, when both kernels exist here (else None): SPECX_KERNELS=rowgemm or
    fbgemm, else the faster on one layer, timed once per machine and rowgemm build (cpu/timed.py)."""
    if not (row_kernel() and qlinear.usable("fp16")):
        return None
    forced = os.environ.get(DISABLE_ENV, "").lower()
    if forced in ("rowgemm", "fbgemm"):
        return timed.Choice("fp16 weights on", forced, source=f"{DISABLE_ENV}={forced}")
    build = rowgemm.build_id()
    if build not in _timed:
        def fbgemm(w: torch.Tensor) -> timed.Run:
            packed = torch.ops.quantized.linear_prepack_fp16(w, None)
            return lambda x: torch.ops.quantized.linear_dynamic_fp16(x, packed)

        def row(w: torch.Tensor) -> timed.Run:
            half = w.half().contiguous()
            return lambda x: rowgemm.linear(x, half)

        from ..state.paths import kernel_cache

        _timed[build] = timed.choose("fp16 weights on", kernel_cache() / f"fp16-{build}.json",
                                     {"fbgemm": fbgemm, "rowgemm": row})
    return _timed[build]


def fp16_on_rowgemm() -> bool:
    """Whether fp16 weights run on rowgemm here (fp16_choice; rowgemm alone where fbgemm is missing)."""
    choice = fp16_choice()
    return row_kernel() and (choice is None or choice.pick == "rowgemm")


def apply(model, weights: str) -> str:
    """Swap the model's linear layers for the chosen CPU kernels; one sentence saying what ran."""
    if weights == "fp16" and available(model) and fp16_on_rowgemm():
        swapped, weights = row_linears(model, half=True), "rowgemm fp16"
    elif (weights in qlinear.LAYERS or weights in qlinear.DRAFT_ONLY) and _on_cpu(model):
        swapped = qlinear.quantize_linears(model, weights)
    elif available(model) and row_kernel():
        return describe(row_linears(model), "rowgemm")   # the weights stay where they are: nothing to free
    else:
        swapped, weights = (prepack_linears(model) if available(model) else 0), "none"
    if swapped:
        own_memory(model)
    return describe(swapped, weights)


def own_memory(model) -> None:
    """Copy the tensors still backed by the memory-mapped weight file into ordinary memory.

    The packed layers hold their own copies, but while any tensor still points into the mapped
    file, the file stays mapped and every page read during packing stays resident: a float32 model
    would count twice in RSS (measured on SmolLM2: 1184 MiB instead of ~600). Copying the few
    unpacked tensors (embeddings, norms) lets the mapping go."""
    with torch.no_grad():
        for module in model.modules():
            for name, param in list(module.named_parameters(recurse=False)):
                param.data = param.data.clone()
            for name, buf in list(module.named_buffers(recurse=False)):
                if buf is not None:
                    module._buffers[name] = buf.clone()
    _return_freed_memory()


def _return_freed_memory() -> None:
    """Give the heap freed by the replaced weights back to the OS (glibc keeps it otherwise)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: the memory is reused, only RSS looks larger
        pass


def describe(swapped: int, weights: str = "none") -> str:
    """One sentence for the run's explanation."""
    if not swapped:
        return "kernels: PyTorch default linear layers"
    if weights == "rowgemm":
        return (f"kernels: specx rowgemm float32 linears ({swapped} layers; same weights, verifying "
                f"a few tokens costs little more than decoding one; {_reading_ahead()})")
    if weights == "rowgemm fp16":
        return (f"kernels: fp16 weight-only linears on specx rowgemm ({swapped} layers; float32 arithmetic, "
                f"rows exact whatever the batch; {_reading_ahead()}; {_fp16_why('rowgemm')})")
    if weights == "fp16" and fp16_choice() is not None:
        return f"kernels: fp16 weight-only linears on fbgemm ({swapped} layers; {_fp16_why('fbgemm')})"
    if weights == "none":
        why = rowgemm.why_not() if os.environ.get(DISABLE_ENV, "").lower() != "onednn" else ""
        return (f"kernels: oneDNN prepacked float32 linears ({swapped} layers; same weights, "
                "cheaper multi-token verification on CPU" + (f"; specx's own kernel is off: {why}" if why else "")
                + ")")
    if weights in qlinear.DRAFT_ONLY:
        return (f"kernels: int8 weights and activations, scaled per forward ({swapped} layers; fp16 where a layer "
                "narrows its input)")
    return f"kernels: {weights} weight-only linears ({swapped} layers)"


def _fp16_why(pick: str) -> str:
    """Why fp16 weights run on `pick`, in words that do not change between processes (measured keys use them)."""
    choice = fp16_choice()
    if choice is None:
        return "fbgemm is missing from this PyTorch build"
    if choice.source not in ("timed", "saved"):
        return choice.source
    other = "fbgemm" if pick == "rowgemm" else "specx rowgemm"
    return f"timed faster than {other} on this CPU"


def _reading_ahead() -> str:
    """Whether rowgemm prefetches here (timed once per machine: `specx env` says what it measured)."""
    return f"L2 prefetching {'on' if rowgemm.prefetches() else 'off'} on this CPU"
