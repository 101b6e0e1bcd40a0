"""`specx plan`: the plan from configs alone, as text or JSON; refusals exit 4 with a need/budget table."""
from __future__ import annotations

import json
import os

import pytest
from cli_helpers import invoke, make_folder
from conftest import fixture_model


def weightless(path):
    """A model folder with its weights deleted: planning must not need them."""
    folder = make_folder(path, layers=2)
    for f in folder.glob("*.safetensors"):
        f.unlink()
    return folder


def test_plan_json_without_weights(tmp_path):
    target, drafter = weightless(tmp_path / "t"), weightless(tmp_path / "d")
    result = invoke("plan", str(target), "-d", str(drafter), "--mem-budget", "gpu=1GiB,cpu=2GiB,disk=1GiB",
                    "--context", "128", "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["target"]["groups"] and plan["drafter"]["groups"]
    assert plan["summary"] == "target gpu, drafter gpu"
    totals = plan["total_bytes"]
    assert totals["overall"] == totals["cuda:0"] + totals["cpu"] and totals["cuda:0"] > 0
    assert totals["cpu"] == plan["target"]["runtime_bytes"] + plan["drafter"]["runtime_bytes"]  # tokenizers
    assert plan["budgets"]["source"] == "from --mem-budget"


def test_plan_text_lists_groups_and_reasons(tmp_path):
    result = invoke("plan", str(weightless(tmp_path / "t")), "--mem-budget", "gpu=0,cpu=2GiB,disk=1GiB")
    assert result.exit_code == 0, result.stderr
    assert "model.layers.0 … 1" in result.stdout and "summary: target cpu" in result.stdout
    assert "dtype: float32 on the CPU" in result.stderr and "target: whole in CPU memory" in result.stderr


def test_refusal_exits_4_with_a_table(tmp_path):
    result = invoke("plan", str(weightless(tmp_path / "t")), "--mem-budget", "gpu=0,cpu=100KB,disk=1GiB")
    assert result.exit_code == 4
    assert "need" in result.stderr and "budget" in result.stderr and "error:" in result.stderr


def test_bad_budget_is_a_usage_error(tmp_path):
    result = invoke("plan", str(weightless(tmp_path / "t")), "--mem-budget", "vram=1GiB")
    assert result.exit_code == 2 and "unknown --mem-budget device" in result.stderr


def test_plan_names_the_lean_decoders_activation_mode_as_asked(tmp_path):
    """A model the lean decoder runs as its files hold it: the plan says which activations its linear
    kernels take, int8 (q8) unless `--quant none` asks for float32, as the run will load it."""
    folder = make_folder(tmp_path / "t", layers=2)
    said = {}
    for quant in ("auto", "none", "q8"):
        result = invoke("plan", str(folder), "--mem-budget", "gpu=0", "--quant", quant)
        assert result.exit_code == 0, result.stderr
        said[quant] = next(line for line in result.stdout.splitlines() if line.startswith("target "))
    assert all("lean decoder" in line for line in said.values()), said
    assert "(q8)" in said["auto"] and "(q8)" in said["q8"] and "float32 activations (exact)" in said["none"]


def test_a_lean_drafters_trimmed_output_rows_are_in_the_plan(tmp_path, monkeypatch):
    """A drafter on specx's decoder keeps a copy of its first output rows (VocabTrim's default): the plan
    counts that many rows at the file's bytes per row in the drafter's CPU runtime, and nothing for a
    vocabulary too small to trim."""
    from specx.decoder import vocabtrim

    target, drafter = make_folder(tmp_path / "t", layers=2), make_folder(tmp_path / "d", layers=1, seed=5)

    def drafter_plan():
        result = invoke("plan", str(target), "-d", str(drafter), "--mem-budget", "gpu=0", "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["drafter"]

    untrimmed = drafter_plan()
    monkeypatch.setattr(vocabtrim, "MIN_VOCAB_TO_TRIM", 48)
    monkeypatch.setattr(vocabtrim, "DEFAULT_KEEP", 16)
    trimmed = drafter_plan()
    groups = {g["kind"]: g["bytes"] for g in untrimmed["groups"] if g["bytes"]}   # (trimmed: an untied head is
    vocab = 96                                                                   # left in the file, priced at none)
    row = (groups.get("head") or groups["embed"]) // vocab
    assert trimmed["runtime_bytes"] - untrimmed["runtime_bytes"] == 16 * row > 0


def test_the_plan_predicts_a_peak_rss_with_the_process_itself(tmp_path):
    """The planned peak RSS is the plan's CPU bytes plus the specx process's own (Python, torch,
    transformers), which no budget pays for: JSON carries both, the text says it."""
    from specx.memory.footprint import PROCESS_BYTES

    target = weightless(tmp_path / "t")
    result = invoke("plan", str(target), "--mem-budget", "gpu=0,cpu=2GiB,disk=1GiB", "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["process_bytes"] == PROCESS_BYTES > 0
    assert plan["rss_bytes"] == plan["total_bytes"]["cpu"] + PROCESS_BYTES
    text = invoke("plan", str(target), "--mem-budget", "gpu=0,cpu=2GiB,disk=1GiB")
    assert "peak RSS (estimate)" in text.stdout and "not drawn from the budget" in text.stdout


@pytest.mark.slow
def test_a_gguf_on_the_lean_decoder_is_priced_by_how_that_decoder_runs():
    """A GGUF target on specx's decoder: its prompt pass is priced as that decoder holds it (float32, two
    hidden and three MLP rows a token for a chunk of PROMPT_CHUNK tokens, and a score tile for each task that
    attends at once), not as transformers' modules (four and three for the whole prompt), and it is the CPU
    headroom; its tokenizer grows its runtime bytes by RUNTIME_PER_ENTRY a vocabulary entry."""
    from specx.decoder.config import PROMPT_CHUNK, SCORE_TILE_BYTES
    from specx.memory.footprint import RUNTIME_BASE, RUNTIME_PER_ENTRY

    path = fixture_model("smollm2-135m")
    result = invoke("plan", str(path), "-d", "none", "--mem-budget", "gpu=0", "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    hidden, inter, vocab, heads, kv = 576, 1536, 49152, 9, 3   # SmolLM2-135M's config
    ctx, cpus = plan["context"], len(os.sched_getaffinity(0))
    assert ctx > PROMPT_CHUNK
    assert PROMPT_CHUNK * heads // kv * ctx * 4 > SCORE_TILE_BYTES   # a chunk's scores take several tiles
    scores = SCORE_TILE_BYTES * cpus   # a tile of score rows for each running task
    assert plan["target"]["activation_bytes"] == PROMPT_CHUNK * (2 * hidden + 3 * inter) * 4 + scores
    assert plan["headroom_bytes"]["cpu"] == plan["target"]["activation_bytes"]
    assert plan["target"]["runtime_bytes"] == RUNTIME_BASE + RUNTIME_PER_ENTRY * vocab


@pytest.mark.slow
def test_a_target_that_drafts_for_itself_is_planned_with_its_kept_output_rows():
    """`--drafter self` (and auto, which self-drafts where no model drafter is at hand) keeps a copy of the
    target's first output rows for its drafts (VocabTrim's default): the target's runtime bytes grow by that
    many rows at the file's bytes per row; plain decoding keeps none."""
    from specx.decoder.vocabtrim import choose_keep

    path = fixture_model("smollm2-135m")

    def runtime(drafter):
        result = invoke("plan", str(path), "-d", drafter, "--mem-budget", "gpu=0", "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["target"]["runtime_bytes"]

    row = 576 // 32 * 34   # the tied Q8_0 head's bytes per row
    assert runtime("self") - runtime("none") == choose_keep(None, 49152) * row > 0
    assert runtime("auto") == runtime("self")


@pytest.mark.slow
def test_the_plans_byte_column_lines_up_whatever_a_schemes_length():
    """A file's own formats make long scheme names ("Q5_0/Q8_0/Q6_K/Q4_K (file) (read by rows)"): every
    group's bytes still end in one column."""
    result = invoke("plan", str(fixture_model("qwen2.5-coder-0.5b")), "-d", "none", "--mem-budget", "gpu=0")
    assert result.exit_code == 0, result.stderr
    rows = [line.split("  + KV")[0] for line in result.stdout.splitlines() if line.startswith("  model.")
            or line.startswith("  lm_head")]
    assert len(rows) >= 4 and any("(read by rows)" in r for r in rows)
    assert len({len(r) for r in rows}) == 1, rows
