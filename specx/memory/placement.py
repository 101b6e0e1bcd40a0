"""`specx run` applies the memory plan: precision, device map, disk offload, the MoE expert cache.

The plan (memory/planner.py) is made from the configs alone, before any weight is read; this module
turns it into load arguments and says in one sentence what it chose. A plan that cannot work is
refused before loading (exit 4, with the need-versus-budget table).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import UsageError
from .footprint import native_mode

CPU_BACKENDS = ("fp16", "int8", "int4")   # the fast path's weight-only CPU kernels (fastpath.py)
DRAFT_WEIGHTS = ("int8dyn",)               # ... and the drafter-only one the plan may price a drafter in
BNB = ("int8", "nf4", "fp4")
# The lean decoder's mode (cpu/quant.py) per role when not asked (NATIVE_MODE, kept in footprint.py with the
# schemes that price it): int8 activations (per 32 values; per 256 into Q4_K and Q6_K layers where the build gains by
# it, cpu/quant.py) for both. A drafter never changes the output; for the target q8 passed the quality guard (greedy
# agreement 99.1%, perplexity ratio 1.000 with the dequantized float32 model; with Q4_K per 256 values 98.9% and
# 1.003: benchmarks/results/2026-11-30-q8k; with Q6_K too 99.1%, 1.000: 2026-11-30-q6k) and verifies 5 tokens 1.6x faster than float32 activations
# (benchmarks/results/2026-11-26-native-cpu).
# `--quant none` keeps float32 activations (exact). A drafter's wider layers are also re-encoded to Q4_0 (q4,
# decoder/reencode.py): its step reads less (benchmarks/results/2026-11-29-drafter-bits); `--draft-quant q8`
# keeps the file's blocks.
DENSE_DTYPES = ("bfloat16", "float16")   # on one GPU, these run on specx's CUDA decoder (_dense_on_gpu)
MOE_SLACK = 2          # --moe-offload without a planned budget: room for the experts of this many tokens


@dataclass(frozen=True)
class Load:
    """How to load one model: dtype, CPU weight precision, and from_pretrained arguments (frozen)."""

    dtype: str
    weights: str = "none"                  # fastpath precision, only for models wholly in CPU memory
    kwargs: tuple = ()                     # sorted (key, value) pairs for from_pretrained; () = plain load

    @property
    def dispatched(self) -> bool:
        return bool(self.kwargs)

    def from_pretrained_kwargs(self) -> dict:
        out = dict(self.kwargs)
        if "device_map" in out:
            out["device_map"] = dict(out["device_map"])
        if "quantization_config" in out:
            from .plan import bnb_config

            out["quantization_config"] = bnb_config(*out["quantization_config"])
        return out


@dataclass(frozen=True)
class Applied:
    plan: object                           # MemoryPlan
    target: Load
    drafter: Load | None
    moe_budget: int = 0                    # bytes for the expert cache; 0 = experts stay resident
    note: str = ""

    @property
    def summary(self) -> str:
        """'target float32 cpu, drafter fp16 cpu', '… 62% gpu / 38% cpu', plus the k cap and MoE offload."""
        parts = [_describe(self.plan.target, self.target)]
        if self.plan.drafter and self.drafter:
            parts.append(_describe(self.plan.drafter, self.drafter))
        if self.plan.k_cap < self.plan.k:
            parts.append(f"k ≤ {self.plan.k_cap}")
        if self.moe_budget:
            parts.append("MoE experts offloaded")
        return ", ".join(parts)


def _on_gpu(model_plan) -> bool:
    return any(d.startswith("cuda") for d in model_plan.devices)


def _describe(model_plan, load: Load) -> str:
    if model_plan.native:
        return f"{model_plan.role} {model_plan.native} {model_plan.share()}"
    precision = model_plan.quant if model_plan.quant in BNB and _on_gpu(model_plan) else (
        load.weights if load.weights != "none" and not load.weights.startswith("dense") else load.dtype)
    return f"{model_plan.role} {precision} {model_plan.share()}"


def plan_run(source, draft_source, k: int, dtype: str, quant: str, mem_budget: str | None,
             allow_disk: bool = False, moe_offload: bool = False, draft_quant: str = "auto",
             notify=None, self_draft: bool = False, self_copy: bool = False,
             shares_tokenizer: bool | None = None) -> Applied:
    """Plan memory for this run and derive how to load each model. Raises PlanRefused (exit 4).
    `shares_tokenizer`: plan_for's, where the caller knows it."""
    from . import plan_for
    from .planner import PlanRefused
    from ..models.resolve import _check_hf_folder

    for src in filter(None, (source, draft_source)):   # what loading would refuse, said before planning
        if src.kind == "hf":
            _check_hf_folder(src.path)
    try:
        plan = plan_for(source, draft_source, None, k, mem_budget, dtype, quant, allow_disk, draft_quant, self_draft,
                        self_copy, shares_tokenizer)
    except PlanRefused as e:
        if notify:
            notify(e.table)
        raise
    _check_devices(plan)
    target = _load(plan.target, plan, "target", quant, source)
    drafter = _load(plan.drafter, plan, "drafter", draft_quant, draft_source) if plan.drafter else None
    moe = plan.expert_cache_bytes
    if moe_offload and not moe:
        moe = -1   # sized after loading, from the model's own experts
    applied = Applied(plan, target, drafter, moe)
    return Applied(plan, target, drafter, moe, "; ".join([_sentence(plan, applied.summary)]
                                                         + variants(source, draft_source)))


def variants(source, draft_source) -> list[str]:
    """Which of its presets' files each model is, where a GGUF variant was chosen (models/variant.py)."""
    return [f"{role} {s.variant}" for role, s in (("target", source), ("drafter", draft_source))
            if s is not None and s.variant]


def _check_devices(plan) -> None:
    import torch

    wants_gpu = any(d.startswith("cuda") for m in (plan.target, plan.drafter) if m for d in m.devices)
    if wants_gpu and not torch.cuda.is_available():
        raise UsageError("the memory plan places layers on a GPU, and PyTorch sees none here",
                         "drop gpu=… from --mem-budget to run on the CPU (`specx plan` simulates GPUs)")


ACTIVATIONS = {"f32": "float32 activations (exact)", "q8": "int8 activations into the linears (q8)",
               "q4": "int8 activations into the linears (q4)"}


def _load(model_plan, plan, role: str, quant: str, source=None) -> Load:
    devices = model_plan.devices
    if _dense_on_gpu(model_plan, source):
        blocks = " blocks" if model_plan.blocks else ""
        return Load(model_plan.dtype, f"dense {devices[0]} {model_plan.dtype} {model_plan.context}{blocks}")
    if not _on_gpu(model_plan) and "disk" not in devices and model_plan.native:
        return Load(model_plan.dtype, f"native {native_mode(role, quant)}")
    if not _on_gpu(model_plan) and "disk" not in devices:   # wholly in CPU memory: int8 is the CPU kernel
        planned = model_plan.quant in CPU_BACKENDS + DRAFT_WEIGHTS
        weights = model_plan.quant if planned else _default_weights(quant, role)
        return Load(model_plan.dtype, weights)
    if not _on_gpu(model_plan) and model_plan.quant in CPU_BACKENDS:
        raise UsageError(f"the plan both packs the {role} as {model_plan.quant} and keeps part of it on disk, "
                         "and specx cannot load that combination",
                         "plan disk offload of the loaded weights with --quant none, or raise --mem-budget")
    kwargs = plan.load_kwargs(role)
    if model_plan.quant == "int8":   # LLM.int8 logs its fp16 cast at every forward (seen on an H100: 13 lines a run)
        logging.getLogger("bitsandbytes.autograd._functions").setLevel(logging.ERROR)
    frozen = []
    for key, value in sorted(kwargs.items()):
        if key == "device_map":
            value = tuple(sorted(value.items()))
        elif key == "quantization_config":
            value = (model_plan.quant, model_plan.dtype, "cpu" in devices)
        frozen.append((key, value))
    return Load(model_plan.dtype, "none", tuple(frozen))


def _dense_on_gpu(model_plan, source) -> bool:
    """Whether specx's CUDA decoder (decoder/dense.py, CUDA graphs) runs this model: wholly on one GPU, in
    bfloat16/float16 without bitsandbytes, of a family the lean decoder runs. Anything else keeps
    transformers' model (device maps, offload, bitsandbytes, float32, other families)."""
    if source is None or model_plan.quant != "none" or model_plan.dtype not in DENSE_DTYPES:
        return False
    if len(model_plan.devices) != 1 or not model_plan.devices[0].startswith("cuda"):
        return False
    from ..decoder.support import reason

    return reason(source.path) == ""


def _default_weights(quant: str, role: str) -> str:
    from ..cpu import fastpath

    return fastpath.choose(quant, role)


def _sentence(plan, summary: str) -> str:
    """One human sentence: where the models go, what was planned against which budget, and why."""
    from .probe import fmt_bytes

    where = ", ".join(f"{d} {fmt_bytes(n)}" for d, n in plan.total_bytes().items() if d != "overall")
    why = next((r.removeprefix("target: ") for r in plan.reasons if r.startswith("target:")), "")
    return f"memory: {summary} (planned {where}; budgets {plan.budgets.describe()})" + (f"; {why}" if why else "")


def attach_experts(lm, budget: int, notify=None):
    """Put the target's MoE experts behind a budgeted cache on its compute device; returns the cache."""
    from .experts import expert_bytes, offload_experts
    from .probe import fmt_bytes

    try:
        one = expert_bytes(lm.model)
    except ValueError:
        raise UsageError(f"{lm.name} has no mixture-of-experts layers to offload",
                         "drop --moe-offload (it is for Mixtral, Qwen-MoE and OLMoE models)") from None
    if budget < 0:
        cfg = lm.model.config
        per_token = int(getattr(cfg, "num_experts_per_tok", 2) or 2)
        budget = one * per_token * int(getattr(cfg, "num_hidden_layers", 1)) * MOE_SLACK
    cache = offload_experts(lm.model, budget, lm.device)
    if notify:
        notify(f"experts: kept in CPU memory behind a {fmt_bytes(budget)} cache on {lm.device} "
               f"({budget // max(one, 1)} experts of {fmt_bytes(one)}), filled from the router with "
               f"next-layer prefetch; exact")
    return cache
