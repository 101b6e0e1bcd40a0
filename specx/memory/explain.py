"""The memory plan's sentences (decide.py plans): why the target sits where it does and in what precision, where
the lean CPU decoder reads a file's blocks from, and why no placement works when none does."""
from __future__ import annotations

from .decoders import weights_phrase
from .footprint import is_blocks, is_native
from .planner import CPU, DISK, GPU, place, refuse

BNB = ("int8", "nf4", "fp4")   # bitsandbytes' precisions


def refuse_why(target, scheme, off, ctx, act, rooms, budget, req):
    """Say why no placement works: the largest group fits nowhere, or disk would be needed. The table
    shows, per device, the target's share plus what is reserved there (drafter, headroom, speculation)."""
    biggest = max(target.groups, key=off.group_bytes)
    roomy = {d: n for d, n in rooms.items() if n is not None and d != DISK}
    if all(off.group_bytes(biggest) > n for n in roomy.values()):
        raise refuse(f"the budget is below the largest layer of {target.name} ({biggest.name})",
                     [(d, off.group_bytes(biggest), n) for d, n in roomy.items()],
                     "raise --mem-budget or pick a smaller model")
    placed = place(target, scheme, off, ctx, act, dict(rooms, **{DISK: 1 << 62}), target.tied)
    rows = [(d, sum(p.bytes + p.kv_bytes for p in (placed or []) if p.device == d) + budget[d] - rooms[d],
             budget[d]) for d in (GPU, CPU, DISK) if rooms.get(d) is not None]
    if placed is not None and not req.allow_disk:
        raise refuse(f"{target.name} needs disk offload under this budget", rows,
                     "raise the budget, or pass --allow-disk-offload (every token then reads weights from disk)")
    raise refuse(f"{target.name} does not fit this budget, even with disk offload", rows)


def native_source(fast: str) -> str:
    """Where the lean CPU decoder reads a file's own blocks from: its layers copied to 2 MiB pages where Linux
    offers them (decoder/resident.py, the same bytes and the same peak), else the file's map, or a copy on plain
    pages where the kernels pack the layers (AVX-512 and AVX2 builds: resident.copies; the plan does not build
    the kernels to ask)."""
    from ..decoder import resident

    if fast == CPU and resident.wanted():
        return "its bytes copied to 2 MiB pages at load"
    if fast == CPU and resident.copies(True):
        return "mapped from the file, or copied at load where the kernels pack its layers (AVX-512, AVX2)"
    return "mapped from the file"


def explain(target, scheme, placed, kk, dc, k, ctx, drafter, fast, reasons, ladder):
    """The plan's sentences on the target (appended to `reasons`): where it sits and in what precision, and why;
    what bitsandbytes costs it; and a cap on speculation that keeps its layers on the fastest device."""
    first = ladder[0]
    devices = {p.device for p in placed}
    where = "on the GPU" if fast == GPU else "in CPU memory"
    if devices == {fast}:
        why = "it fits" if scheme is first else (
            f"{first.name} does not fit (with KV, speculation, headroom"
            + (" and the fast path's packed copy)" if fast == CPU and first.name == "float32" else ")")
            + " and this is the most faithful precision that does")
        if is_native(scheme.name):
            reasons.append(f"target: whole {where}, {weights_phrase(scheme)}: {native_source(fast)}, no converted copy")
        elif is_blocks(scheme.name):
            reasons.append(f"target: whole {where}, {weights_phrase(scheme)}: the file's blocks copied to the GPU once, "
                           "no converted copy" + ("" if scheme is first else f", as {first.name} does not fit"))
        else:
            reasons.append(f"target: whole {where} in {scheme.name}, because {why}")
    else:
        spilled = sorted({p.kind for p in placed if p.device != fast})
        reasons.append(f"target: {scheme.name}, spilling {', '.join(spilled)} groups off the "
                       f"{'GPU' if fast == GPU else 'CPU'}, as it does not fit whole"
                       + (", and of the precisions tried it keeps the most parameters there" if len(ladder) > 1 else ""))
    if scheme.name in BNB and target.experts:
        reasons.append("experts: bitsandbytes leaves fused expert tensors unquantized, so they are priced "
                       "at the compute dtype")
    if scheme.name in BNB and any(p.device != GPU for p in placed):
        reasons.append("offloaded bitsandbytes modules are kept (and priced) in float32")
    if kk < k or (drafter and dc < ctx):
        reasons.append(f"speculation: k capped at {kk}" + (f", drafter context {dc}" if drafter else "")
                       + " so that the target's layers stay on the fastest device")
