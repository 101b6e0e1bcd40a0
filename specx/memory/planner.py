"""The planner: precision, placement and speculation memory for a target and its drafter (SpecMemo).

Order of concessions under pressure, each stated in `reasons`:
1. speculation memory (the drafter's context, then k) shrinks before any target layer leaves the GPU;
2. with `--quant auto`, the target is quantized (GPU: int8, then nf4; CPU: registered backends);
3. target groups spill GPU → CPU → disk (MoE experts first, untied input embeddings next — both are
   cheap to run from the CPU — then decoder layers from the last one back);
4. a plan that needs disk without `allow_disk`, or whose largest layer fits no budget, is refused.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..errors import InsufficientResources
from . import backends as bk
from .footprint import DTYPE_BYTES, Group, Scheme, Shape, plain
from .plan import BLOCKS_HELD, MemoryPlan, ModelPlan, Placement, need_table
from .probe import Budgets, fmt_bytes

GPU, CPU, DISK = "cuda:0", "cpu", "disk"
MIN_DRAFT_CONTEXT = 256
DEFAULT_CONTEXT = 4096
SPILL_FIRST = {"experts": 0, "embed": 1}   # lower spills first; everything else spills last layer first


class PlanRefused(InsufficientResources):
    """A plan that cannot work; `table` holds the need-versus-budget rows to print."""

    default_hint = "raise the budget, pick a smaller model or --quant nf4, or pass --allow-disk-offload"

    def __init__(self, message: str, table: str, hint: str | None = None):
        super().__init__(message, hint)
        self.table = table


@dataclass(frozen=True)
class Request:
    """What the user asked for."""

    context: int | None = None
    k: int = 4
    dtype: str = "auto"
    quant: str = "auto"
    allow_disk: bool = False
    draft_quant: str = "auto"    # the drafter's CPU weights (fastpath.choose)
    self_draft: bool = False     # the target drafts for itself (`--drafter self`): its kept output rows' copy
    self_copy: bool = False      # ... with a Q2_K copy of its layers (`--drafter self-q2k`): that copy and its KV cache


def activation_bytes(shape: Shape, tokens: int, act: int, native: bool = False) -> int:
    """Transient memory of one forward over `tokens` (the prompt): hidden states and MLP intermediates.
    `native`: specx's lean decoder, which runs a longer prompt PROMPT_CHUNK tokens at a time; at its peak (the
    MLP's activation) it holds the residual stream and its norm, the gate/up rows and their product: two hidden
    and three MLP rows a token, in float32, for a chunk's tokens, and while it attends, beside them, the score
    rows of the tasks running at once (one a CPU, cpu/attention.c): a float for every query head of a kv head and
    every slot they see, for as many of the chunk's rows as fit SCORE_TILE_BYTES (at least one)."""
    inter = shape.intermediate * max(1, shape.experts_per_token)
    if native:
        from ..decoder.config import PROMPT_CHUNK, SCORE_TILE_BYTES

        chunk, kv = min(tokens, PROMPT_CHUNK), max(1, shape.kv_heads)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        row = (shape.heads or kv) // kv * tokens * 4   # one row's scores in a task
        scores = min(chunk * row, max(row, SCORE_TILE_BYTES)) * cpus
        return chunk * (2 * shape.hidden + 3 * inter) * 4 + scores   # the buffers stay while it attends
    return tokens * (4 * shape.hidden + 3 * inter) * act


def speculation_bytes(target: Shape, drafter: Shape | None, k: int, draft_ctx: int, act: int, d_act: int,
                      copy_ctx: int = 0) -> int:
    """SpecMemo's budget: logits for k+1 verified tokens (model dtype + fp32 copy), k candidate KV
    entries in the target, and the drafter's KV cache and logits; `copy_ctx` > 0: the target drafts with a
    Q2_K copy of its layers (`--drafter self-q2k`), whose weights and KV cache of that many tokens count here."""
    out = (k + 1) * target.vocab * (act + 4) + k * target.kv_elems_per_token() * act
    if drafter is not None:
        out += k * drafter.vocab * (d_act + 4) + draft_ctx * drafter.kv_elems_per_token() * d_act
    return out + (sum(self_copy_bytes(target, copy_ctx, act)) if copy_ctx else 0)


def self_copy_bytes(shape: Shape, context: int, act: int) -> tuple[int, int]:
    """(weights, KV cache) of a Q2_K copy of the target's layer matrices (drafters/copycache.py) with its own
    KV cache of `context` tokens."""
    from ..cpu.qweight import BLOCKS

    _, per, size = BLOCKS["Q2_K"]
    linear = sum(g.linear_params for g in shape.groups if g.kind == "layer")
    return linear // per * size, context * shape.kv_elems_per_token() * act


def _layer_kv(shape: Shape, g: Group, context: int, act: int) -> int:
    return context * shape.kv_heads * shape.head_dim * 2 * act if g.kind == "layer" else 0


BY_ROWS = {"embed": "input embedding is read from the weight file by rows, as tokens need them: it takes no "
                    "resident memory",
           "head": "output layer stays in the weight file: it scores the rows it keeps a copy of (VocabTrim) and "
                   "reads the context's others by rows"}


def _by_rows(role: str, kind: str, placements: list[Placement], reasons) -> list[Placement]:
    """The `kind` group read from the weight file by rows (BY_ROWS): priced at none, and said."""
    full = sum(p.bytes for p in placements if p.kind == kind)
    if reasons is not None and full:
        reasons.append(f"{role}: its {fmt_bytes(full)} {BY_ROWS[kind]}")
    return [replace(p, bytes=0, scheme=p.scheme + " (read by rows)") if p.kind == kind else p for p in placements]


def _gpu_order(groups: tuple[Group, ...], tied: bool) -> list[Group]:
    """Groups by claim on the GPU, strongest first: small top-level pieces, layers 0…N−1, then the
    untied input embeddings (a lookup), then experts (last layer's first to go)."""
    def rank(g: Group) -> int:
        return 2 if g.kind == "embed" and tied else SPILL_FIRST.get(g.kind, 2)

    return sorted(groups, key=lambda g: (-rank(g), g.layer if g.layer is not None else -1))


def place(shape: Shape, on_gpu: Scheme, off_gpu: Scheme, context: int, act: int,
          room: dict[str, int | None], tied: bool) -> list[Placement] | None:
    """Fill the GPU in claim order, then the CPU, then disk; None when something fits nowhere."""
    room = dict(room)
    out = []
    for g in _gpu_order(shape.groups, tied):
        kv = _layer_kv(shape, g, context, act)
        device = next((d for d, s in ((GPU, on_gpu), (CPU, off_gpu), (DISK, off_gpu))
                       if room.get(d) is not None and s.group_bytes(g) + kv * (d != DISK) <= room[d]), None)
        if device is None:
            return None
        scheme = on_gpu if device == GPU else off_gpu
        size, kv = scheme.group_bytes(g), kv if device != DISK else 0
        room[device] -= size + kv
        if device == DISK:
            room[CPU] = (room[CPU] or 0) - kv  # a disk-offloaded layer keeps its KV in CPU memory
        out.append(Placement(g.name, g.kind, device, scheme.name, size, kv, g.parts))
    if tied:   # accelerate keeps tied weights together: the head goes where the embeddings went
        emb = next(p for p in out if p.kind == "embed")
        out = [replace(p, device=emb.device) if p.kind == "head" else p for p in out]
    order = {g.name: i for i, g in enumerate(shape.groups)}
    return sorted(out, key=lambda p: order[p.group])


def plan(target: Shape, drafter: Shape | None, budgets: Budgets, req: Request = Request(),
         simulated: bool = False) -> MemoryPlan:
    """The plan for this pair on these budgets, or PlanRefused."""
    from .decide import decide

    return decide(target, drafter, budgets, req, simulated)


def scheme_for(backend: bk.Backend, compute: str) -> Scheme:
    """A backend's scheme with its non-quantized parts in the compute dtype (GPU backends)."""
    s = backend.scheme()
    return replace(s, other_dtype=compute) if backend.device == "cuda" else s


def offload_scheme(on_gpu: Scheme, compute: str) -> Scheme:
    """What a module spilled off the GPU costs: bitsandbytes keeps offloaded modules in fp32."""
    if on_gpu.name in ("int8", "nf4", "fp4"):
        return replace(plain("float32"), name="float32 (bnb offload)")
    return plain(compute)


def refuse(message: str, rows: list[tuple[str, int, int | None]], hint: str | None = None) -> PlanRefused:
    """A refusal naming each device's need and what is left of its budget (never below zero: a budget that
    other parts of the plan already overspent has nothing left)."""
    rows = [(d, n, None if b is None else max(b, 0)) for d, n, b in rows]
    return PlanRefused(message + " (" + "; ".join(
        f"{d} needs {fmt_bytes(n)} of {'none' if b is None else fmt_bytes(b)}" for d, n, b in rows) + ")",
        need_table(rows), hint)


def act_bytes(dtype: str) -> int:
    return DTYPE_BYTES[dtype]


def runtime_bytes(shape: Shape, scheme_name: str, on_cpu: bool, draft_scheme: str = "") -> int:
    """CPU bytes beyond the tensors: tokenizer and objects, plus on the CPU the fast path's packed copy and,
    for a drafter (`draft_scheme`: the scheme its weights run in), its copy of its kept output rows."""
    from .footprint import fastpath_copy, runtime_overhead

    base = runtime_overhead(shape.vocab, shape.shares_tokenizer)
    return base + fastpath_copy(shape, scheme_name) + draft_head_bytes(shape, draft_scheme) if on_cpu else base


def draft_head_bytes(shape: Shape, scheme_name: str) -> int:
    """The copy of the output rows a drafter on specx's decoder keeps by default (vocabtrim.DraftHead: the first
    ids, at the file's bytes per row; the context's rows are a few dozen an answer)."""
    from ..decoder.vocabtrim import choose_keep
    from .footprint import file_scheme, is_native

    keep = choose_keep(None, shape.vocab) if is_native(scheme_name) else 0
    if not keep:
        return 0
    scheme = file_scheme(shape)
    heads = [g for g in shape.groups if g.kind == "head" and scheme.group_bytes(g)] or \
        [g for g in shape.groups if g.kind == "embed"]   # a tied head is the embedding
    return keep * sum(scheme.group_bytes(g) for g in heads) // max(shape.vocab, 1)


def make_model_plan(role: str, shape: Shape, dtype: str, quant: str, placements: list[Placement],
                    context: int, lossy: bool, prompt: int, reasons: list[str] | None = None,
                    drafts_itself: bool = False) -> ModelPlan:
    from .footprint import BLOCKS, NATIVE, is_blocks, is_native

    act = act_bytes(dtype)
    on_cpu = bool(placements) and all(p.device == "cpu" for p in placements)
    native = placements[0].scheme if placements and all(is_native(p.scheme) for p in placements) else ""
    held = native.removesuffix(NATIVE)
    if placements and all(is_blocks(p.scheme) for p in placements):   # a GGUF's blocks on a GPU
        held = placements[0].scheme.removesuffix(BLOCKS) + BLOCKS_HELD
    placements = _mapped(role, shape, dtype, native or quant, placements, context, on_cpu, reasons)
    return ModelPlan(role, shape.name, dtype, quant, tuple(placements), context,
                     shape.kv_bytes_per_token(dtype), activation_bytes(shape, prompt, act, bool(native)), lossy,
                     runtime_bytes(shape, native or (quant if quant != "none" else dtype), on_cpu,
                                   native if role == "drafter" or drafts_itself else ""),
                     held)


def _mapped(role, shape, dtype, quant, placements, context, on_cpu, reasons) -> list[Placement]:
    """An untied embedding read by rows costs no resident memory, nor does the untied output layer of a drafter on
    specx's decoder that scores a VocabTrim copy of its rows (runtime_bytes counts the copy; decoder/resident.py
    leaves the layer in the file's map; a tied one is the embedding, copied); an embedding that stays
    memory-mapped is priced by the rows a run can touch (mapped.py)."""
    from .mapped import read_by_rows, resident_embedding, stays_mapped

    if role == "drafter" and on_cpu and not shape.tied and draft_head_bytes(shape, quant):
        placements = _by_rows(role, "head", placements, reasons)
    if read_by_rows(shape, quant, on_cpu):
        return _by_rows(role, "embed", placements, reasons)
    if not stays_mapped(shape, dtype, quant, on_cpu):
        return placements
    out = []
    for p in placements:
        if p.kind == "embed":
            resident = resident_embedding(shape, p.bytes, context)
            if resident < p.bytes and reasons is not None:
                reasons.append(f"{role}: its {fmt_bytes(p.bytes)} input embedding stays memory-mapped from the "
                               f"weight file, so only the rows of the tokens it sees become resident: "
                               f"{fmt_bytes(resident)} at {context} tokens")
            p = replace(p, bytes=resident, scheme=p.scheme + " (mapped)" if resident < p.bytes else p.scheme)
        out.append(p)
    return out
