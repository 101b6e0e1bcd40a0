"""Expert offload with a budgeted LRU cache: resident outputs bit for bit, budget kept, counters move."""
from __future__ import annotations

import pytest

from test_memory_footprint import moe_config
from test_memory_offload import logits_by_step

from specx.memory.experts import expert_bytes, offload_experts

PROMPT = [3, 5, 7, 9, 11, 13, 2, 4]


def tiny(kind: str):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(moe_config(kind)).eval()


@pytest.mark.parametrize("kind", ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe"])
@pytest.mark.parametrize("impl", ["grouped_mm", "eager"])
def test_offloaded_experts_give_the_resident_outputs(kind, impl):
    import torch

    model = tiny(kind)
    model.config._experts_implementation = impl
    resident = logits_by_step(model, PROMPT, steps=4)
    cache = offload_experts(model, budget_bytes=3 * expert_bytes(model))
    offloaded = logits_by_step(model, PROMPT, steps=4)
    assert all(torch.equal(a, b) for a, b in zip(resident, offloaded))
    assert cache.stats.misses > 0 and cache.stats.hits > 0


def test_the_cache_never_exceeds_its_budget_and_prefetch_pays():
    model = tiny("mixtral")
    budget = 3 * expert_bytes(model)
    cache = offload_experts(model, budget_bytes=budget)
    logits_by_step(model, PROMPT, steps=8)
    s = cache.stats
    assert 0 < s.peak_bytes <= budget and cache.used <= budget
    assert s.prefetches > 0 and 0 < s.prefetch_used <= s.prefetches
    assert s.bytes_moved == (s.misses + s.prefetches) * expert_bytes(model)


def test_a_cache_holding_every_expert_only_misses_once_per_expert():
    model = tiny("olmoe")
    cache = offload_experts(model, budget_bytes=10 * 2 * 4 * expert_bytes(model))   # all 2 layers × 4 experts
    logits_by_step(model, PROMPT, steps=6)
    assert cache.stats.misses + cache.stats.prefetches <= 2 * 4
    assert cache.stats.hit_rate > 0.5
