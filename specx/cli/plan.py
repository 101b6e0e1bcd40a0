"""`specx plan MODEL`: the memory plan (placement, precision, KV, headroom, reasons) without loading weights."""
from __future__ import annotations

import json
import sys
from itertools import groupby
from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, output

EXAMPLES = """\b
Examples:
  specx plan ./qwen2.5-coder-1.5b.gguf --drafter ./qwen2.5-coder-0.5b.gguf
  specx plan ./model-folder --mem-budget gpu=6GiB,cpu=16GiB --context 8192 -k 6
  specx plan smollm2 --json | jq .total_bytes
"""


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def plan(
    ctx: typer.Context,
    model: Annotated[str, typer.Argument(help="A GGUF file, a Hugging Face model folder, or a preset name.")],
    drafter: Annotated[str, typer.Option("--drafter", "-d", help="auto (the preset's model drafter), none, ngram, self (no drafter memory: the target's own layers), a model, or MODEL+ngram.")] = "auto",
    mem_budget: Annotated[Optional[str], typer.Option("--mem-budget", help="Simulate budgets, e.g. gpu=6GiB,cpu=16GiB[,disk=100GB]; gpu=0 plans without a GPU. Unnamed ones are detected.")] = None,
    context: Annotated[Optional[int], typer.Option("--context", help="Tokens of context to plan for (default: min(model limit, 4096)).")] = None,
    draft_tokens: Annotated[int, typer.Option("--draft-tokens", "-k", show_default=False, help="Tokens drafted per round (default: as `specx run` takes it: up to 16 under its auto policy).")] = 4,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto: bfloat16 on GPU, float32 on CPU).")] = "auto",
    quant: Annotated[str, typer.Option(help="auto (quantize only when needed), none, int8, nf4, fp4 (GPU), a registered CPU backend, or a preset's GGUF variant (Q4_K_M, Q8_0, ...).")] = "auto",
    draft_quant: Annotated[str, typer.Option("--draft-quant", help="Drafter weights on CPU, as `specx run` takes them: auto (q4 on specx's decoder, else int8dyn where available), q4, q8, none, fp16, int8, int4, int8dyn.")] = "auto",
    allow_disk_offload: Annotated[bool, typer.Option("--allow-disk-offload", help="Allow weights on disk (slow) instead of refusing.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Plan memory for a target and its drafter from their configs alone (no weights are loaded)."""
    from ..memory import plan_for
    from ..memory.planner import PlanRefused
    from ..memory.placement import variants
    from ..memory.variant import Ask, source_for
    from ..policy.tuned import SELF_COPY, SPECIAL, split_hybrid
    from ..state.limits import runtime_quant
    from .defaults import resolve as resolve_options

    m = resolve_options(ctx, dict(locals()), prompt_param=None)[0].model   # as `specx run` would take them
    source = source_for(m.model, Ask(m.quant, m.dtype, m.mem_budget))
    choice = split_hybrid(m.drafter)[0]   # MODEL+ngram: copying costs no memory beyond the model's
    if m.drafter == "auto":
        choice = next((d for d in (source.preset.drafters if source.preset else ()) if d != "ngram"), "none")
    # self drafts with the target's own weights: no drafter, only the copy of the output rows it keeps (self-q2k:
    # and a 2-bit copy of its layers, priced with its KV cache); auto
    # without a model drafter drafts itself where the target runs on specx's decoder (api.prepare)
    draft_source = None if choice in SPECIAL or m.k == 0 else \
        source_for(choice, Ask(m.draft_quant, m.draft_dtype or m.dtype, m.mem_budget))
    self_draft = m.k != 0 and (choice in ("self", SELF_COPY) or (m.drafter == "auto" and choice == "none"))
    try:
        result = plan_for(source, draft_source, context, m.k, m.mem_budget, m.dtype, runtime_quant(m.quant),
                          m.allow_disk_offload, runtime_quant(m.draft_quant), self_draft,
                          m.k != 0 and choice == SELF_COPY)
    except PlanRefused as e:
        output.note(e.table)
        raise
    if json_out:
        sys.stdout.write(json.dumps(result.to_json(), indent=1) + "\n")
        return
    sys.stdout.write(render(result, {"target": runtime_quant(m.quant), "drafter": runtime_quant(m.draft_quant)}) + "\n")
    for reason in variants(source, draft_source) + list(result.reasons):
        output.note(reason)


def _b(n: int) -> str:
    from ..memory.probe import fmt_bytes

    return fmt_bytes(n)


def _rows(m) -> list[str]:
    """Consecutive groups of one kind on one device with one scheme share a line."""
    out = []
    key = lambda p: (p.kind, p.device, p.scheme)  # noqa: E731
    width = max([22] + [len(p.scheme) + 2 for p in m.placements])   # a file's own formats can be long
    for (kind, device, scheme), run in groupby(m.placements, key=key):
        run = list(run)
        name = run[0].group if len(run) == 1 else f"{run[0].group} … {run[-1].group.rsplit('.', 1)[-1]}"
        kv = sum(p.kv_bytes for p in run)
        out.append(f"  {name:<34}{device:<8}{scheme:<{width}}{_b(sum(p.bytes for p in run)):>11}"
                   + (f"  + KV {_b(kv)}" if kv else ""))
    return out


def render(p, asked: dict[str, str] | None = None) -> str:
    """The plan as text; `asked`: the --quant and --draft-quant given (role → value), which name the lean
    decoder's activation mode."""
    from ..memory.footprint import REENCODED
    from ..memory.placement import ACTIVATIONS, native_mode
    from ..memory.plan import BLOCKS_HELD

    lines = [f"budgets: {p.budgets.describe()}"]
    for m in (p.target, p.drafter):
        if m is None:
            continue
        lossy = " (lossy: the output is the quantized model's own)" if m.lossy else ""
        mode = ACTIVATIONS[native_mode(m.role, (asked or {}).get(m.role, "auto"))]
        if m.blocks:
            weights = (f"{m.native.removesuffix(BLOCKS_HELD)} as the file holds it (specx's GPU block kernels), "
                       f"{m.dtype} activations")
        else:
            held = "from the file" if REENCODED in m.native else "as the file holds it"
            weights = (f"{m.native} {held} (specx's lean decoder), {mode}" if m.native
                       else f"{m.dtype}, quant {m.quant}{lossy}")
        lines.append(f"{m.role} {m.name}: {weights}; {m.share()}; "
                     f"KV {_b(m.kv_bytes_per_token)}/token")
        lines += _rows(m)
    lines.append(f"speculation: k {p.k_cap}" + (f" (asked {p.k})" if p.k_cap < p.k else "")
                 + (f", drafter context {p.drafter_context}" if p.drafter else "") + f", {_b(p.speculation_bytes)}")
    lines.append(f"context: {p.context} planned, up to {p.max_context} fit")
    lines.append("headroom: " + (", ".join(f"{d} {_b(n)}" for d, n in p.headroom) or "none"))
    lines.append(f"load peak (estimate): {_b(p.load_peak_bytes)}")
    lines.append("total: " + ", ".join(f"{d} {_b(n)}" for d, n in p.total_bytes().items()))
    lines.append(f"peak RSS (estimate): {_b(p.rss_bytes())}, with this process's own {_b(p.process_bytes)} "
                 "(Python, torch, transformers; not drawn from the budget)")
    lines.append(f"summary: {p.summary()}")
    return "\n".join(lines)
