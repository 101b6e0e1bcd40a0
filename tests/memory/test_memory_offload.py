"""Plans applied at load time: a tiny saved model offloaded under a budget computes what it computes in memory."""
from __future__ import annotations

import pytest

from test_memory_footprint import llama_config, moe_config

from specx.memory.shapes import shape_of
from specx.memory.planner import Request, plan
from specx.memory.probe import Budgets
from specx.models.lm import _cache_argument


def logits_by_step(model, ids: list[int], steps: int = 3):
    """Prefill, then `steps` greedy single-token steps through a KV cache: every step's logits."""
    import torch
    from transformers import DynamicCache

    cache, out = DynamicCache(), []
    x = torch.tensor([ids])
    with torch.no_grad():
        for _ in range(steps + 1):
            logits = model(input_ids=x, **{_cache_argument(model): cache}, use_cache=True).logits[0, -1]
            out.append(logits)
            x = logits.argmax().view(1, 1)
    return out


@pytest.mark.parametrize("kind", ["llama", "mixtral", "qwen2_moe", "qwen3_moe", "olmoe"])
def test_offloaded_model_gives_the_resident_outputs(kind, tmp_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    config = llama_config(False, layers=2) if kind == "llama" else moe_config(kind)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "model")
    # the baseline loads the same files into memory (weights mapped from files may sit at other
    # alignments than freshly built ones, which moves float32 results by an ulp either way)
    resident = AutoModelForCausalLM.from_pretrained(tmp_path / "model").eval()
    shape = shape_of(config)
    from specx.memory.footprint import runtime_overhead

    budget = Budgets(None, shape.params * 4 // 2 + runtime_overhead(shape.vocab), 1 << 30)   # about half the weights fit
    p = plan(shape, None, budget, Request(context=16, k=2, dtype="float32", quant="none", allow_disk=True))
    kinds_on_disk = {x.kind for x in p.target.placements if x.device == "disk"}
    assert kinds_on_disk, p.summary()
    if kind != "llama":
        assert "experts" in kinds_on_disk and all(x.device == "cpu" for x in p.target.placements
                                                  if x.group == "model.layers.0")
    monkeypatch.setenv("SPECX_OFFLOAD_DIR", str(tmp_path / "offload"))
    offloaded = AutoModelForCausalLM.from_pretrained(tmp_path / "model", **p.load_kwargs()).eval()
    assert any(w.device.type == "meta" for w in offloaded.parameters())   # accelerate holds them off-memory
    for a, b in zip(logits_by_step(resident, [3, 5, 7, 9, 11]), logits_by_step(offloaded, [3, 5, 7, 9, 11])):
        assert torch.equal(a, b)
