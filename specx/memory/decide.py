"""The planning algorithm (see planner.py for the order of concessions)."""
from __future__ import annotations

from ..errors import UsageError
from . import backends as bk
from .decoders import native, on_blocks
from .drafter_fit import place_drafter
from .explain import BNB, explain, refuse_why
from .footprint import (DTYPE_BYTES, Scheme, Shape, blocks_scheme, fastpath_copy, file_scheme, is_blocks, is_native,
                        plain, runtime_overhead)
from .plan import MemoryPlan
from .planner import (CPU, PlanRefused, DEFAULT_CONTEXT, DISK, GPU, MIN_DRAFT_CONTEXT, Request, activation_bytes, make_model_plan, offload_scheme, place, refuse, scheme_for, self_copy_bytes, speculation_bytes)
from .probe import Budgets, fmt_bytes

FLOAT_FILES = {"float32", "bfloat16", "float16"}   # file formats a lossy CPU precision may stand in for


def _context(target: Shape, drafter: Shape | None, req: Request, reasons: list[str]) -> int:
    limit = min(target.max_context, drafter.max_context if drafter else target.max_context)
    if req.context is None:
        ctx = min(limit, DEFAULT_CONTEXT)
        reasons.append(f"context: planned for {ctx} tokens (the models hold {limit}; --context plans for more)")
        return ctx
    if not 0 < req.context <= limit:
        raise UsageError(f"--context {req.context} is outside what the models hold (1…{limit})",
                         f"pass --context {limit} or less")
    return req.context


def _compute_dtype(req: Request, gpu: bool, reasons: list[str]) -> str:
    if req.dtype != "auto":
        if req.dtype not in DTYPE_BYTES:
            raise UsageError(f"unknown dtype {req.dtype}", "use auto, float32, bfloat16 or float16")
        return req.dtype
    if not gpu:
        reasons.append("dtype: float32 on the CPU for activations and the KV cache (the exact reference, and "
                       "specx's fast CPU path)")
        return "float32"
    try:
        import torch

        bf16 = not torch.cuda.is_available() or torch.cuda.is_bf16_supported()
    except ImportError:   # pragma: no cover
        bf16 = True
    reasons.append("dtype: " + ("bfloat16, the GPU's native half precision" if bf16 else
                                "float16, since this GPU lacks bfloat16"))
    return "bfloat16" if bf16 else "float16"


def _ladder(req: Request, fast: str, compute: str, simulated: bool, reasons: list[str],
            target: Shape | None = None) -> list[Scheme]:
    """Target weight schemes to try on the fast device, most faithful first. On a GPU a GGUF's own blocks
    come right after the compute dtype: the dense decoder in bfloat16 is the path measured on a GPU (issue 38),
    the blocks keep the file's 4-bit form where a bfloat16 copy does not fit, before bitsandbytes' conversions
    (blocks cannot spill: the CUDA decoder runs a model wholly on one GPU)."""
    ladder = _others(req, fast, compute, simulated, target)
    if target is not None and on_blocks(target, fast, req.dtype, req.quant, simulated):
        ladder.insert(1 if ladder and ladder[0].name == compute else 0, blocks_scheme(target, compute))
    return ladder


def _others(req: Request, fast: str, compute: str, simulated: bool, target: Shape | None) -> list[Scheme]:
    device = "cuda" if fast == GPU else "cpu"
    if target is not None and native(target, fast, req.dtype, req.quant):
        own = file_scheme(target)   # the file's own model, no conversion; a float file may still fall back to
        if req.quant != "auto" or not set(target.file_format.split("/")) <= FLOAT_FILES:   # a smaller CPU
            return [own]                                                                   # precision
        smaller = [b for b in bk.backends("cpu", only_available=not simulated) if b.lossy]
        return [own] + [scheme_for(b, compute) for b in smaller]
    if req.quant not in ("auto", "none"):
        b = bk.backend(device, req.quant)
        if b is None:
            names = sorted({n for n in ("none", "auto", *(x.name for x in bk.backends(device, False)))})
            raise UsageError(f"--quant {req.quant} has no {device} backend", f"use one of: {', '.join(names)}")
        if not simulated and not bk._ok(b):
            raise UsageError(f"--quant {req.quant} is not available here",
                             "install bitsandbytes (pip install 'specx[quant]')" if b.name in BNB else b.note)
        return [scheme_for(b, compute)]
    first = plain(compute)
    if req.quant == "none":
        return [first]
    others = [b for b in bk.backends(device, only_available=not simulated)
              if b.lossy and b.weight_bytes < DTYPE_BYTES[compute] and b.name != "fp4"]  # fp4: only on request
    if device == "cpu" and req.dtype == "auto":   # bfloat16 before any lossy CPU backend
        others = [b for b in bk.backends("cpu", not simulated) if b.name != compute
                  and b.weight_bytes < DTYPE_BYTES[compute] and not b.lossy] + others
    return [first] + [scheme_for(b, compute) for b in others]


def _levels(k: int, ctx: int, model_drafter: bool) -> list[tuple[int, int]]:
    """Speculation sizes, largest first: the drafter's context halves, then k drops to 1."""
    out, dc = [(k, ctx)], ctx
    while model_drafter and dc > MIN_DRAFT_CONTEXT:
        dc = max(MIN_DRAFT_CONTEXT, dc // 2)
        out.append((k, dc))
    out += [(kk, dc) for kk in range(k - 1, 0, -1)]
    return out


def decide(target: Shape, drafter: Shape | None, budgets: Budgets, req: Request, simulated: bool) -> MemoryPlan:
    """The plan; on a GPU, a GGUF target that the drafter placed first (in the compute dtype) would push off the
    GPU or into bitsandbytes' conversion is planned again with the drafter in its blocks, then on the CPU: the
    first plan that keeps the target whole on the GPU as the file holds it (or in the compute dtype) wins."""
    plan = _decide(target, drafter, budgets, req, simulated)
    if drafter is None or budgets.gpu is None or _whole(plan) or not on_blocks(target, GPU, req.dtype, req.quant,
                                                                               simulated):
        return plan
    for where in ("blocks", "cpu"):
        if where == "blocks" and not on_blocks(drafter, GPU, req.dtype, req.draft_quant, simulated):
            continue
        try:
            other = _decide(target, drafter, budgets, req, simulated, where)
        except PlanRefused:
            continue
        if _whole(other):
            return other
    return plan


def _whole(plan: MemoryPlan) -> bool:
    """The target wholly on the GPU, unconverted: in its blocks or the compute dtype."""
    return plan.target.devices == (GPU,) and plan.target.quant == "none"


def _decide(target: Shape, drafter: Shape | None, budgets: Budgets, req: Request, simulated: bool,
            draft_place: str = "first") -> MemoryPlan:
    reasons: list[str] = []
    ctx = _context(target, drafter, req, reasons)
    fast = GPU if budgets.gpu is not None else CPU
    compute = _compute_dtype(req, fast == GPU, reasons)
    room = {GPU: budgets.gpu, CPU: budgets.cpu, DISK: budgets.disk}
    d_act = DTYPE_BYTES[compute]
    headroom = {d: 0 for d in (GPU, CPU)}
    drafter_plan, spec_dev, budget = None, fast, dict(room)
    room[CPU] -= runtime_overhead(target.vocab)   # the target's tokenizer and objects live in CPU memory
    if drafter is not None:
        drafter_plan, spec_dev = place_drafter(drafter, compute, ctx, room, fast, reasons, headroom,
                                                 req.draft_quant, req.dtype, simulated, draft_place)
    ladder = _ladder(req, fast, compute, simulated, reasons, target)
    _check_largest(target, ladder, budget, fast)
    k = req.k
    levels = _levels(k, ctx, drafter is not None)
    chosen = None
    for scheme in ladder:
        act = DTYPE_BYTES[scheme.other_dtype]
        head = max(headroom[fast], activation_bytes(target, ctx, act, is_native(scheme.name)))
        for kk, dc in levels:
            spec = speculation_bytes(target, drafter, kk, dc, act, d_act, ctx if req.self_copy else 0)
            left = room[fast] - head - (spec if spec_dev == fast else 0)
            left -= fastpath_copy(target, scheme.name) if fast == CPU else 0
            only = {GPU: None, CPU: None, DISK: None, fast: left}
            placed = place(target, scheme, scheme, ctx, act, only, target.tied)
            if placed is not None:
                chosen = (scheme, placed, kk, dc, head, spec)
                break
        if chosen:
            break
    if chosen is None:
        chosen = _best_spill(target, drafter, ladder, compute, ctx, levels, room, budget, headroom, fast,
                             spec_dev, d_act, req, reasons)
    scheme, placed, kk, dc, head, spec = chosen
    headroom[fast] = max(headroom[fast], head)
    explain(target, scheme, placed, kk, dc, k, ctx, drafter, fast, reasons, ladder)
    if req.self_copy:
        weights, kv = self_copy_bytes(target, ctx, DTYPE_BYTES[scheme.other_dtype])
        reasons.append(f"drafter: a 2-bit copy of the target's layers ({fmt_bytes(weights)}) and its own KV cache "
                       f"({fmt_bytes(kv)} at {ctx} tokens), counted with speculation")
    t_plan = make_model_plan("target", target, scheme.other_dtype, "none" if not scheme.lossy else scheme.name,
                             placed, ctx, scheme.lossy, ctx, reasons, req.self_draft)
    cache = _expert_cache(target, scheme, compute, placed, fast, reasons)
    plan = MemoryPlan(t_plan, drafter_plan, k, kk, ctx, dc if drafter else 0, spec,
                      tuple((d, n) for d, n in headroom.items() if n), budgets, tuple(reasons),
                      expert_cache_bytes=cache)
    return _finish(plan, target)


def _expert_cache(target, scheme, compute, placed, fast, reasons) -> int:
    """Experts off the GPU are served by an expert cache on it, in the room kept free for streaming."""
    off = [p for p in placed if p.kind == "experts" and p.device != fast]
    if fast != GPU or not off:
        return 0
    size = max(offload_scheme(scheme, compute).group_bytes(g) for g in target.groups)
    reasons.append(f"experts: {len(off)} of {target.layers} layers' experts live in CPU memory; a "
                   f"{fmt_bytes(size)} cache on the GPU holds the experts the router picks")
    return size


def _check_largest(target: Shape, ladder: list[Scheme], budget: dict, fast: str) -> None:
    """Every layer runs on the fast device, even when it lives elsewhere: the largest must fit there."""
    smallest = min(ladder, key=lambda s: max(s.group_bytes(g) for g in target.groups))
    biggest = max(target.groups, key=smallest.group_bytes)
    if smallest.group_bytes(biggest) > budget[fast]:
        raise refuse(f"the {'GPU' if fast == GPU else 'CPU'} budget is below the largest layer of {target.name} "
                     f"({biggest.name} in {smallest.name})", [(fast, smallest.group_bytes(biggest), budget[fast])],
                     "raise --mem-budget or pick a smaller model")


def _best_spill(target, drafter, ladder, compute, ctx, levels, room, budget, headroom, fast, spec_dev, d_act,
                req, reasons):
    """Of the schemes that must spill, the one that keeps the largest share of parameters on the fast
    device (the more faithful one on a tie); the last refusal if none works."""
    best, error = None, None
    for scheme in ladder:
        if is_blocks(scheme.name):   # the CUDA decoder runs a model wholly on one GPU
            continue
        try:
            found = _spill(target, drafter, scheme, compute, ctx, levels, room, budget, headroom, fast,
                           spec_dev, d_act, req)
        except PlanRefused as e:
            error = e   # the most compact scheme's refusal says the most
            continue
        names = {p.group for p in found[1] if p.device == fast}
        share = sum(g.params for g in target.groups if g.name in names)
        if best is None or share > best[0]:
            best = (share, found)
    if best is None:
        raise error
    if best[1][4] > max(headroom[fast], activation_bytes(target, ctx, DTYPE_BYTES[best[1][0].other_dtype])):
        reasons.append("gpu: the largest offloaded group's size is kept free to stream it in")
    return best[1]


def _spill(target, drafter, scheme, compute, ctx, levels, room, budget, headroom, fast, spec_dev, d_act, req):
    """The target does not fit the fast device whole: spill groups, keeping whichever speculation size
    keeps the most target bytes on the fast device (the smallest, unless the full one costs nothing)."""
    act = DTYPE_BYTES[scheme.other_dtype]
    off = offload_scheme(scheme, compute) if fast == GPU else scheme
    head = max(headroom[fast], activation_bytes(target, ctx, act))
    stream = max(off.group_bytes(g) for g in target.groups) if fast == GPU else 0
    best = None
    for kk, dc in (levels[-1], levels[0]):
        spec = speculation_bytes(target, drafter, kk, dc, act, d_act, ctx if req.self_copy else 0)
        rooms = dict(room)
        rooms[fast] -= head + stream + (spec if spec_dev == fast else 0)
        if spec_dev != fast:
            rooms[spec_dev] -= spec
        if fast == GPU:   # (no fast-path copy when spilling: specx packs only models wholly in CPU memory)
            rooms[CPU] -= headroom[CPU]
        allowed = dict(rooms, **{DISK: rooms[DISK] if req.allow_disk else None})
        placed = place(target, scheme, off, ctx, act, allowed, target.tied)
        if placed is None:
            refuse_why(target, scheme, off, ctx, act, rooms, budget, req)
        on_fast = sum(p.bytes for p in placed if p.device == fast)
        if best is None or on_fast >= best[0]:
            best = (on_fast, (scheme, placed, kk, dc, head + stream, spec))
    return best[1]


def _finish(plan: MemoryPlan, target: Shape) -> MemoryPlan:
    """Load peak (estimate: steady state plus the largest group in flight) and the largest context."""
    from dataclasses import replace

    totals = plan.total_bytes()
    biggest = max(p.bytes for p in plan.target.placements)
    per_tok = {d: sum(p.kv_bytes for p in plan.target.placements if p.device == d) / plan.context
               for d in (GPU, CPU)}
    budget = {GPU: plan.budgets.gpu, CPU: plan.budgets.cpu}
    extra = [int((budget[d] - totals.get(d, 0)) // per_tok[d]) for d in (GPU, CPU) if per_tok[d] and budget[d]]
    limit = min(target.max_context, plan.context + max(0, min(extra))) if extra else plan.context
    reasons = plan.reasons + (f"max context: {limit} tokens fit in this plan",)
    return replace(plan, load_peak_bytes=totals["overall"] + biggest, reasons=reasons, max_context=limit)
