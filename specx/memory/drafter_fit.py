"""The drafter's place, decided before the target's (it runs k times a round): which device, in which weights, and
what it holds beyond them."""
from __future__ import annotations

from . import backends as bk
from .decoders import native, on_blocks, weights_phrase
from .footprint import (DTYPE_BYTES, Scheme, Shape, blocks_scheme, file_scheme, int8dyn_scheme, is_blocks, is_native,
                        plain, reencodes)
from .plan import Placement
from .planner import CPU, GPU, MIN_DRAFT_CONTEXT, activation_bytes, make_model_plan, runtime_bytes
from .probe import fmt_bytes


def place_drafter(drafter: Shape, compute: str, ctx: int, room: dict, fast: str, reasons: list[str],
                   headroom: dict, draft_quant: str = "auto", dtype: str = "auto", simulated: bool = False,
                   place: str = "first") -> tuple:
    """The drafter goes first onto the fastest device (it runs k times a round), whole or not at all;
    on the CPU in the weights it will run in (`draft_quant`, resolved as loading resolves it); on a GPU in the
    compute dtype, or a GGUF drafter in its own blocks where that does not fit. `place` (decide's second
    tries): "blocks" a GGUF drafter's blocks on the GPU (decide asks only where it has them), "cpu" the CPU."""
    act = DTYPE_BYTES[compute]
    need = lambda s: sum(s.group_bytes(g) for g in drafter.groups)  # noqa: E731
    dev, scheme = fast, plain(compute)
    head = activation_bytes(drafter, ctx, act)
    minimum = need(scheme) + head + MIN_DRAFT_CONTEXT * drafter.kv_elems_per_token() * act
    if on_blocks(drafter, fast, dtype, draft_quant, simulated) and (place == "blocks" or fast == GPU and
                                                                    minimum > room[GPU]):
        scheme = blocks_scheme(drafter, compute)   # the file's blocks where a bfloat16 copy does not fit
        minimum = need(scheme) + head + MIN_DRAFT_CONTEXT * drafter.kv_elems_per_token() * act
    gpu_short = fast == GPU and (minimum > room[GPU] or place == "cpu")
    if fast == CPU or gpu_short:
        dev = CPU
        scheme = file_scheme(drafter, reencodes(draft_quant)) if native(drafter, CPU, dtype, draft_quant) else \
            _cpu_scheme(drafter, draft_quant)
    if place != "first":
        reasons.append(f"drafter: whole on the {'GPU' if dev == GPU else 'CPU'} in {weights_phrase(scheme)}, so that the "
                       "target fits whole on the GPU (placed first in bfloat16, it would not)")
    elif gpu_short:
        reasons.append(f"drafter: on the CPU in {weights_phrase(scheme)}, since it needs {fmt_bytes(minimum)} and the "
                       f"GPU budget is {fmt_bytes(room[GPU])}")
    else:
        reasons.append(f"drafter: whole on the {'GPU' if dev == GPU else 'CPU'} in {weights_phrase(scheme)}, placed first "
                       "because it runs k times per round")
    if dev == CPU and is_native(scheme.name):   # specx's decoder reads a long prompt a chunk at a time
        head = activation_bytes(drafter, ctx, act, native=True)
    runtime = runtime_bytes(drafter, scheme.name, dev == CPU, draft_scheme=scheme.name)
    if drafter.shares_tokenizer:
        reasons.append("drafter: its file holds the target's vocabulary, so it is given the target's tokenizer and "
                       "none of its own is priced")
    if need(scheme) + head + (runtime if dev == CPU else 0) > room[dev]:
        from .planner import refuse
        raise refuse(f"the drafter {drafter.name} does not fit", [(dev, need(scheme) + head, room[dev])],
                     "pick a smaller drafter, or --drafter ngram")
    placed = [Placement(g.name, g.kind, dev, scheme.name, scheme.group_bytes(g), 0, g.parts) for g in drafter.groups]
    room[dev] -= need(scheme)
    room[CPU] -= runtime
    headroom[dev] = max(headroom[dev], head)
    quant = "none" if scheme.name == scheme.other_dtype or is_native(scheme.name) or is_blocks(scheme.name) \
        else scheme.name
    plan = make_model_plan("drafter", drafter, scheme.other_dtype, quant, placed, ctx, False, ctx, reasons)
    return plan, dev


def _cpu_scheme(drafter: Shape, draft_quant: str) -> Scheme:
    """The drafter's weights on the CPU: int8dyn where fbgemm exists (fastpath.choose), else float32."""
    from ..cpu.fastpath import choose

    weights = choose(draft_quant, "drafter")
    if weights == "int8dyn":
        return int8dyn_scheme(drafter)
    cpu = bk.backend(CPU, weights)
    return cpu.scheme() if weights != "none" and cpu else plain("float32")
