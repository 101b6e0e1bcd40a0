"""`specx run` applies the memory plan: precision under a budget, disk offload, refusals, MoE expert offload."""
from __future__ import annotations

import json

import pytest

from cli_helpers import invoke, one_thread, word_tokenizer  # noqa: F401
from test_memory_footprint import moe_config

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPT = "w5 w9 w12 w5 w9 w12 w5"


def save(config, path, seed: int = 0):
    """A random model from `config` with the word tokenizer, saved as safetensors."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).eval()
    model.generation_config.eos_token_id = 1
    model.save_pretrained(path, safe_serialization=True)
    word_tokenizer(config.vocab_size, 1, None).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def mid_model(tmp_path_factory):
    """A Llama big enough (4 MiB of float32 weights) for budgets that sit between precisions."""
    from transformers import LlamaConfig

    cfg = LlamaConfig(vocab_size=96, hidden_size=128, intermediate_size=512, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      eos_token_id=1, bos_token_id=0, tie_word_embeddings=False)
    return save(cfg, tmp_path_factory.mktemp("placement") / "mid")


def run_json(*args):
    result = invoke("run", *args, "--raw", "-n", "8", "--json")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    tokens = [t for e in lines if e["type"] == "round" for t in e["token_ids"]]
    return tokens, lines[-1]["stats"], result.stderr


def cpu_budget_for(model, want, quant="auto"):
    """The largest CPU budget (1 MiB steps) whose plan (`--quant quant`) satisfies `want` (plans read the
    config only)."""
    from specx.memory import plan_for
    from specx.memory.planner import PlanRefused
    from specx.models.resolve import resolve

    for mib in range(768, 63, -1):
        try:
            p = plan_for(resolve(str(model)), None, None, 4, f"cpu={mib}MiB", "auto", quant, True)
        except PlanRefused:
            continue
        if want(p):
            return mib, p
    raise AssertionError("no budget gives that plan")


def test_a_run_states_its_placement(mid_model):
    tokens, stats, err = run_json(str(mid_model), PROMPT, "-d", "ngram")
    assert stats["placement"] == "target float32 cpu" and "memory: target float32 cpu (planned" in err


def test_a_tight_cpu_budget_makes_the_run_load_a_smaller_precision(mid_model):
    """Under a budget that float32 does not fit, the run loads what the plan chose, and says why."""
    mib, p = cpu_budget_for(mid_model, lambda p: all(x.device == "cpu" for x in p.target.placements)
                            and (p.target.dtype != "float32" or p.target.quant != "none"))
    chosen = p.target.quant if p.target.quant != "none" else p.target.dtype
    tokens, stats, err = run_json(str(mid_model), PROMPT, "-d", "ngram", "--mem-budget", f"cpu={mib}MiB")
    assert chosen in stats["placement"] or chosen in err
    plain, _, _ = run_json(str(mid_model), PROMPT, "-d", "none", "--mem-budget", f"cpu={mib}MiB")
    assert tokens == plain   # speculation stays exact on the planned model


def test_disk_offload_is_refused_unless_allowed_and_then_gives_the_resident_output(mid_model):
    mib, p = cpu_budget_for(mid_model, lambda p: "disk" in p.target.devices, quant="none")
    result = invoke("run", str(mid_model), PROMPT, "--raw", "-n", "8", "-d", "ngram", "--quant", "none",
                    "--mem-budget", f"cpu={mib}MiB")
    assert result.exit_code == 4, result.stderr
    assert "need" in result.stderr and "budget" in result.stderr and "--allow-disk-offload" in result.stderr
    resident, _, _ = run_json(str(mid_model), PROMPT, "-d", "ngram", "--quant", "none")
    tokens, stats, err = run_json(str(mid_model), PROMPT, "-d", "ngram", "--quant", "none",
                                  "--mem-budget", f"cpu={mib}MiB", "--allow-disk-offload")
    assert "disk" in stats["placement"] and tokens == resident


def test_a_simulated_gpu_budget_without_a_gpu_is_a_usage_error(mid_model):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = invoke("run", str(mid_model), PROMPT, "--raw", "-n", "4", "--mem-budget", "gpu=1GiB")
    assert result.exit_code == 2 and "sees none" in result.stderr and "hint:" in result.stderr


@pytest.mark.parametrize("kind", ["mixtral", "qwen3_moe"])
def test_moe_offload_gives_the_resident_output_and_reports_the_cache(kind, tmp_path):
    model = save(moe_config(kind), tmp_path / kind)
    resident, stats, _ = run_json(str(model), PROMPT, "-d", "ngram", "-k", "3")
    assert stats["experts"] is None
    tokens, stats, err = run_json(str(model), PROMPT, "-d", "ngram", "-k", "3", "--moe-offload")
    assert tokens == resident
    e = stats["experts"]
    assert e["hits"] + e["misses"] > 0 and e["prefetches"] > 0 and "experts:" in err
    assert "MoE experts offloaded" in stats["placement"]


def test_moe_offload_on_a_dense_model_is_a_usage_error(mid_model):
    result = invoke("run", str(mid_model), PROMPT, "--raw", "-n", "4", "--moe-offload")
    assert result.exit_code == 2 and "no mixture-of-experts" in result.stderr


@pytest.mark.parametrize("quant", ["fp16", "int8", "int4"])
def test_cpu_weight_precisions_load_through_the_fast_path_not_bitsandbytes(mid_model, quant):
    """On the CPU `int8` names the fast path's kernel; bitsandbytes is only for models on a GPU."""
    from specx.models.resolve import resolve
    from specx.memory.placement import plan_run

    applied = plan_run(resolve(str(mid_model)), None, 4, "auto", quant, "gpu=0,cpu=8GiB")
    assert applied.target.weights == quant and not applied.target.dispatched
    assert applied.summary == f"target {quant} cpu"


@pytest.mark.parametrize("quant, target, drafter", [("auto", "q8", "q4"), ("q8", "q8", "q8"), ("q4", None, "q4"),
                                                     ("none", "f32", "f32")])
def test_a_gguf_file_on_the_cpu_runs_int8_activations_unless_none_asks_float32(quant, target, drafter):
    """The lean decoder's mode per --quant: auto is q8 for a target (it passed the quality guard and is the
    faster verify) and q4 for a drafter (its wider layers re-encoded to Q4_0: never the output), none keeps
    float32 activations (exact), q8 and q4 (a drafter's only) as asked."""
    from types import SimpleNamespace

    from specx.memory.placement import _load

    plan = SimpleNamespace(devices=("cpu",), native="Q4_K/Q6_K", dtype="float32", quant="none", context=512)
    for role, mode in (("target", target), ("drafter", drafter)):
        if mode:
            assert _load(plan, None, role, quant).weights == f"native {mode}"
