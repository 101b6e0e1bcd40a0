"""On a CUDA device: a plan with bitsandbytes nf4 and a GPU budget that forces CPU offload is honoured."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_nf4_plan_with_cpu_offload_stays_within_its_gpu_budget(tmp_path, monkeypatch):
    pytest.importorskip("bitsandbytes")
    from transformers import AutoModelForCausalLM, LlamaConfig

    from specx.runtime.memory.footprint import shape_of
    from specx.runtime.memory.planner import Request, plan
    from specx.runtime.memory.probe import Budgets

    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=12,
                         num_attention_heads=16, num_key_value_heads=4, tie_word_embeddings=False)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "model")
    shape = shape_of(config)
    p = plan(shape, None, Budgets(200 << 20, 16 << 30, 16 << 30), Request(context=512, k=4, quant="nf4"))
    assert p.target.quant == "nf4" and "cpu" in p.target.devices, p.summary()
    monkeypatch.setenv("SPECX_OFFLOAD_DIR", str(tmp_path / "offload"))
    torch.cuda.reset_peak_memory_stats()
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "model", **p.load_kwargs()).eval()
    with torch.no_grad():
        model(input_ids=torch.arange(1, 500, device="cuda:0").view(1, -1))
    assert torch.cuda.max_memory_allocated() <= p.total_bytes()["cuda:0"]
