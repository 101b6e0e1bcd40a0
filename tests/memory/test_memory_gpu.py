"""On a CUDA device (the `gpu` tier; run it as its own command, `pytest -m gpu`): memory plans, runs,
sampling and bench rows on the GPU."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_nf4_plan_with_cpu_offload_stays_within_its_gpu_budget(tmp_path, monkeypatch):
    pytest.importorskip("bitsandbytes")
    from transformers import AutoModelForCausalLM, LlamaConfig

    from specx.memory.shapes import shape_of
    from specx.memory.planner import Request, plan
    from specx.memory.probe import Budgets

    config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=12,
                         num_attention_heads=16, num_key_value_heads=4, tie_word_embeddings=False)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "model")
    shape = shape_of(config)
    p = plan(shape, None, Budgets(200 << 20, 16 << 30, 16 << 30), Request(context=512, k=4, quant="nf4"))
    assert p.target.quant == "nf4" and "cpu" in p.target.devices, p.summary()
    monkeypatch.setenv("SPECX_OFFLOAD_DIR", str(tmp_path / "offload"))
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()   # what earlier tests in this process still hold (not this model's)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "model", **p.load_kwargs()).eval()
    with torch.no_grad():
        model(input_ids=torch.arange(1, 500, device="cuda:0").view(1, -1))
    assert torch.cuda.max_memory_allocated() - before <= p.total_bytes()["cuda:0"]


def test_run_on_the_gpu_reports_placement_and_cuda_peak_and_matches_generate(tmp_path):
    """`specx run` on CUDA: the plan puts the model on the GPU, stats carry the allocator's peak, and the
    greedy output equals transformers' generate on the same GPU model."""
    import json

    from cli_helpers import invoke, make_folder
    from transformers import AutoModelForCausalLM

    folder = make_folder(tmp_path / "tiny", layers=2)
    result = invoke("run", str(folder), "w5 w9 w12 w5 w9", "--raw", "-n", "12", "-d", "ngram", "--json",
                    "--dtype", "float32")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    stats = lines[-1]["stats"]
    assert "gpu" in stats["placement"] and stats["gpu_peak_bytes"] > 0
    tokens = [t for e in lines if e["type"] == "round" for t in e["token_ids"]]
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to("cuda:0").eval()
    from specx.models.resolve import load_tokenizer, resolve

    prompt = load_tokenizer(resolve(str(folder)))("w5 w9 w12 w5 w9")["input_ids"]
    ids = torch.tensor([prompt], device="cuda:0")
    out = model.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1]:].tolist()
    assert tokens == out


def test_sampled_speculation_with_a_trimmed_model_drafter_on_the_gpu_is_reproducible(tmp_path):
    """Sampling on CUDA: the target's and the drafter's probabilities meet the CPU generator, and a
    VocabTrimmed drafter head is built where its model lives; the same seed gives the same text."""
    import json

    from cli_helpers import invoke, make_folder

    target = make_folder(tmp_path / "target", layers=2)
    drafter = make_folder(tmp_path / "drafter", layers=1, seed=4)
    runs = []
    for _ in range(2):
        result = invoke("run", str(target), "w5 w9 w12 w5 w9", "--raw", "-n", "16", "-d", str(drafter), "-k", "3",
                        "--draft-policy", "fixed", "--draft-vocab", "48", "-t", "0.8", "--seed", "7", "--json",
                        "--dtype", "float32")
        assert result.exit_code == 0, result.stderr
        lines = [json.loads(x) for x in result.stdout.splitlines()]
        stats = lines[-1]["stats"]
        assert "gpu" in stats["placement"] and stats["drafted"] > 0 and stats["new_tokens"] == 16
        runs.append([t for e in lines if e["type"] == "round" for t in e["token_ids"]])
    assert runs[0] == runs[1]


def test_bench_with_transformers_peers_on_the_gpu_matches_the_baseline(tmp_path):
    """`specx bench --peer hf` on CUDA: transformers' generate gets its input on the model's device, and
    every greedy output (specx's drafter rows and transformers' rows) equals plain decoding's."""
    import json

    from cli_helpers import invoke, make_folder

    target = make_folder(tmp_path / "target", layers=2)
    drafter = make_folder(tmp_path / "drafter", layers=1, seed=4)
    prompts = tmp_path / "p.toml"
    prompts.write_text('[[prompt]]\ncategory = "copy"\ntext = "w5 w9 w12 w5 w9 w12"\n'
                       '[[prompt]]\ncategory = "chat"\ntext = "w7 w8 w30"\n')
    result = invoke("bench", str(target), "-d", str(drafter), "-d", "ngram", "--prompts", str(prompts), "-n", "8",
                    "-r", "1", "--no-warmup", "--peer", "hf", "--dtype", "float32", "--json", "-")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert set(overall) >= {"none", "hf-assisted", "hf-lookup"} and len(overall) == 5
    assert all(row["outputs_matched"] == 2 for row in overall.values()), overall
