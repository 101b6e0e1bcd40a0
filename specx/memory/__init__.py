"""Memory-aware loading: probe budgets, price models from their configs, plan placement (SpecMemo)."""
from __future__ import annotations


def plan_for(source, drafter_source=None, context: int | None = None, k: int = 4, budgets=None,
             dtype: str = "auto", quant: str = "auto", allow_disk: bool = False, draft_quant: str = "auto",
             self_draft: bool = False, self_copy: bool = False, shares_tokenizer: bool | None = None):
    """The MemoryPlan for a resolved target (and model drafter) Source; reads only their configs.

    `budgets`: a Budgets, a `--mem-budget` string or dict (the rest detected), or None (all detected).
    `draft_quant`: the drafter's CPU weights, as `--draft-quant` (auto: int8dyn where fbgemm exists).
    `self_draft`: the target drafts for itself (its lean decoder keeps a copy of its first output rows);
    `self_copy`: with a Q2_K copy of its layers (`--drafter self-q2k`), priced with its KV cache.
    `shares_tokenizer`: whether the drafter's file holds the target's vocabulary, where the caller has asked
    already (None: asked here, models/resolve.same_tokenizer).
    """
    from dataclasses import replace

    from ..models.resolve import same_tokenizer
    from .shapes import shape_for
    from .planner import Request, plan
    from .probe import Budgets, detect, parse_mem_budget

    simulated = False
    if not isinstance(budgets, Budgets):
        override = parse_mem_budget(budgets) if isinstance(budgets, str) else budgets
        simulated = bool(override and "gpu" in override)
        budgets = detect(override)
    target = shape_for(source)
    drafter = shape_for(drafter_source) if drafter_source is not None else None
    if shares_tokenizer is None:
        shares_tokenizer = drafter is not None and same_tokenizer(source, drafter_source)
    if drafter is not None and shares_tokenizer:   # loading hands the drafter the target's tokenizer
        drafter = replace(drafter, shares_tokenizer=True)
    return plan(target, drafter, budgets, Request(context, k, dtype, quant, allow_disk, draft_quant, self_draft,
                                                    self_copy),
                simulated=simulated)
