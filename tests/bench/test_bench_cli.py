"""`specx bench` on tiny models: the JSON schema, CSV, saved results, peers, --compare, --plot, errors."""
from __future__ import annotations

import csv
import io
import json
import sys

import pytest
from jsonschema import Draft202012Validator

from cli_helpers import cli_models, invoke, make_folder, one_thread  # noqa: F401
from specx.bench.report import CSV_COLUMNS
from specx.state import paths

pytestmark = pytest.mark.usefixtures("one_thread")

NUM, INT, STR = {"type": "number", "minimum": 0}, {"type": "integer", "minimum": 0}, {"type": "string"}
OPT_NUM, OPT_INT = {"type": ["number", "null"], "minimum": 0}, {"type": ["integer", "null"], "minimum": 0}
INTERVAL = {"type": "object", "additionalProperties": False, "required": ["median", "lo", "hi", "n"],
            "properties": {"median": NUM, "lo": NUM, "hi": NUM, "n": INT}}
OPT_INTERVAL = {"oneOf": [INTERVAL, {"type": "null"}]}
RATE = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
ROW = {"type": "object", "additionalProperties": False,
       "required": ["config", "category", "precision", "samples", "tok_s", "speedup", "acceptance_rate",
                    "mean_acceptance_length", "per_position_acceptance", "ttft_s", "draft_s", "verify_s",
                    "decode_tok_s", "decode_speedup", "peak_bytes", "weights_bytes", "outputs_matched", "outputs_compared"],
       "properties": {"config": STR, "category": STR, "precision": {"type": "string", "minLength": 1},
                      "samples": INT, "tok_s": INTERVAL, "speedup": OPT_INTERVAL, "acceptance_rate": RATE,
                      "mean_acceptance_length": OPT_NUM, "per_position_acceptance": {"type": "array", "items": RATE},
                      "ttft_s": OPT_INTERVAL, "decode_tok_s": OPT_INTERVAL, "decode_speedup": OPT_INTERVAL,
                      "draft_s": NUM, "verify_s": NUM, "peak_bytes": INT,
                      "weights_bytes": INT, "outputs_matched": OPT_INT, "outputs_compared": OPT_INT}}
CONFIG = {"type": "object", "additionalProperties": False,
          "required": ["label", "drafter", "k", "policy", "confidence", "peer", "baseline", "tuned", "precision",
                       "weights_bytes"],
          "properties": {"label": STR, "drafter": STR, "k": INT, "policy": STR, "confidence": NUM,
                         "peer": {"type": ["string", "null"]}, "baseline": {"type": "boolean"},
                         "tuned": {"type": "boolean"}, "tree": {"type": "integer", "minimum": -1},
                         "precision": {"type": "string", "minLength": 1}, "weights_bytes": INT}}
SAMPLE = {"type": "object", "required": ["config", "prompt", "category", "repeat", "new_tokens", "total_s", "tok_s"],
          "properties": {"repeat": INT, "new_tokens": INT, "total_s": NUM, "tok_s": NUM}}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": False,
    "required": ["version", "kind", "created", "settings", "environment", "configs", "prompts", "complete_units",
                 "interrupted", "rows", "samples"],
    "properties": {
        "version": {"const": 1}, "kind": {"const": "specx-bench"}, "created": STR,
        "settings": {"type": "object", "required": ["model", "dtype", "max_tokens", "repeats", "mode", "prompts",
                                                     "level", "tok_s"]},
        "environment": {"type": "object", "required": ["python", "packages", "device", "torch_threads"],
                        "properties": {"packages": {"type": "object", "required": ["torch", "transformers"]}}},
        "configs": {"type": "array", "items": CONFIG, "minItems": 2},
        "prompts": {"type": "array", "items": {"type": "object", "required": ["name", "category"]}},
        "complete_units": INT, "interrupted": {"type": "boolean"},
        "rows": {"type": "array", "items": ROW, "minItems": 1}, "samples": {"type": "array", "items": SAMPLE},
    },
}


@pytest.fixture
def prompts_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[[prompt]]\ncategory = "copy"\ntext = "w5 w9 w12 w5 w9 w12"\n[[prompt]]\ncategory = "chat"\n'
                    'text = "w7 w8 w30"\n[[prompt]]\ncategory = "chat"\ntext = "w40 w41"\n')
    return str(path)


def bench(*args):
    result = invoke("bench", *args)
    assert result.exit_code == 0, result.stderr
    return result


def test_json_on_stdout_validates_and_the_table_moves_to_stderr(cli_models, prompts_file):
    result = bench(str(cli_models["target"]), "-d", "ngram", "--draft-policy", "fixed", "-k", "2", "-k", "4", "--prompts", prompts_file,
                   "-n", "6", "-r", "2", "--json", "-")
    doc = json.loads(result.stdout)
    Draft202012Validator.check_schema(SCHEMA)
    Draft202012Validator(SCHEMA).validate(doc)
    assert [c["label"] for c in doc["configs"]] == ["none", "ngram k=2 fixed", "ngram k=4 fixed"]
    assert {(r["config"], r["category"]) for r in doc["rows"]} == {
        (c, g) for c in ("none", "ngram k=2 fixed", "ngram k=4 fixed") for g in ("copy", "chat", "overall")}
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert all(r["samples"] == 6 for r in overall.values())
    assert overall["ngram k=4 fixed"]["outputs_matched"] == 6   # greedy: token for token the baseline's
    assert "specx bench" in result.stderr and "precision of none: float32" in result.stderr
    assert doc["complete_units"] == 6 and not doc["interrupted"]


def test_exact_configurations_and_decode_rates(cli_models, prompts_file):
    """--config adds one exact row each (no grid); decode tok/s leaves the first token's time out."""
    result = bench(str(cli_models["target"]), "-c", "drafter=ngram,k=3,policy=auto", "-c", "drafter=ngram,k=2",
                   "--prompts", prompts_file, "-n", "6", "-r", "1", "--no-warmup", "--json", "-")
    doc = json.loads(result.stdout)
    assert [c["label"] for c in doc["configs"]] == ["none", "ngram k=3 auto", "ngram k=2 fixed"]
    for s in doc["samples"]:
        row_total = s["total_s"]
        assert s["ttft_s"] is None or s["ttft_s"] < row_total
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert all(r["decode_tok_s"]["median"] > 0 for r in overall.values())
    assert overall["none"]["decode_speedup"]["median"] == pytest.approx(1.0)


def test_files_are_written_saved_under_the_data_dir_and_the_table_goes_to_stdout(cli_models, prompts_file, tmp_path):
    out_json, out_csv = tmp_path / "r.json", tmp_path / "r.csv"
    result = bench(str(cli_models["target"]), "-d", "ngram", "--draft-policy", "fixed", "--prompts", prompts_file,
                   "-n", "4", "-r", "1", "--no-warmup", "--json", str(out_json), "--csv", str(out_csv))
    assert "overall" in result.stdout and "speedup" in result.stdout
    saved = list((paths.data_dir() / "bench").glob("*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text()) == json.loads(out_json.read_text())
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 2 * 3
    assert {r["config"] for r in rows} == {"none", "ngram k=4 fixed"}
    leftovers = [p.name for p in list(tmp_path.iterdir()) + saved if p.name.startswith(".")]
    assert leftovers == []


def test_peer_rows_run_transformers_on_the_same_weights(cli_models, prompts_file, tmp_path):
    draft = make_folder(tmp_path / "draft", layers=1, seed=5)
    result = bench(str(cli_models["target"]), "-d", str(draft), "--draft-policy", "fixed", "--prompts", prompts_file, "-n", "4", "-r", "1",
                   "--peer", "hf", "--json", "-", "--dtype", "float32")
    doc = json.loads(result.stdout)
    labels = [c["label"] for c in doc["configs"]]
    assert labels == ["none", "draft k=4 fixed", "hf-assisted", "hf-lookup"]
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert overall["hf-lookup"]["outputs_matched"] == 3 and overall["hf-assisted"]["outputs_matched"] == 3
    assert "transformers generate" in overall["hf-assisted"]["precision"]


def test_stock_peer_rows_run_transformers_own_load_of_the_same_files(cli_models, prompts_file, tmp_path):
    """`hf-stock`: transformers loads the models itself (plain nn.Linear layers), each row once."""
    import torch

    from specx.bench import peers

    draft = make_folder(tmp_path / "draft", layers=1, seed=5)
    result = bench(str(cli_models["target"]), "-d", str(draft), "--draft-policy", "fixed", "--prompts", prompts_file, "-n", "4", "-r", "1",
                   "--no-warmup", "--peer", "hf-stock", "--peer", "hf-stock-assisted", "--json", "-")
    doc = json.loads(result.stdout)
    labels = [c["label"] for c in doc["configs"]]
    assert labels == ["none", "draft k=4 fixed", "hf-stock-generate", "hf-stock-assisted", "hf-stock-lookup"]
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert all(overall[label]["tok_s"]["median"] > 0 for label in labels[2:])
    assert "transformers' own layers" in overall["hf-stock-assisted"]["precision"]
    stock = [m for key, m in peers._STOCK.items() if key[0] in (str(cli_models["target"]), str(draft))]
    assert len(stock) == 2
    assert all(type(layer) is torch.nn.Linear for m in stock for layer in m.modules() if hasattr(layer, "in_features"))


def test_a_stock_peer_that_does_not_fit_is_one_clear_error(cli_models, prompts_file, monkeypatch):
    from transformers import AutoModelForCausalLM

    from specx.bench import peers

    monkeypatch.setattr(peers, "_STOCK", {})

    def no_room(*args, **kwargs):
        raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 6 GB")
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", no_room)
    result = invoke("bench", str(cli_models["target"]), "-d", "ngram", "--prompts", prompts_file, "-n", "4",
                    "-r", "1", "--no-warmup", "--peer", "hf-stock-lookup")
    assert result.exit_code == 4 and "error: transformers' own copy" in result.stderr
    assert "hint:" in result.stderr and "--peer hf" in result.stderr and "Traceback" not in result.stderr


def test_assisted_generation_gets_the_drafter_with_every_output_row(cli_models, prompts_file, tmp_path,
                                                                   monkeypatch):
    """specx's drafter may be VocabTrimmed; transformers reads assistant logits as ids, so it must not be."""
    from specx.bench import peers
    from specx.decoder import vocabtrim

    monkeypatch.setattr(vocabtrim, "choose_keep", lambda requested, vocab, lean=True: 24)
    seen, given = [], []
    real = peers.full_vocabulary
    monkeypatch.setattr(peers, "full_vocabulary", lambda *a: given.append(a[0]) or seen.append(real(*a)) or seen[-1])
    draft = make_folder(tmp_path / "draft", layers=1, seed=5)
    result = bench(str(cli_models["target"]), "-d", str(draft), "--draft-policy", "fixed", "--prompts", prompts_file, "-n", "4", "-r", "1",
                   "--no-warmup", "--peer", "hf-assisted", "--json", "-", "--dtype", "float32")
    labels = [c["label"] for c in json.loads(result.stdout)["configs"]]
    assert labels == ["none", "draft k=4 fixed", "hf-assisted"]
    head = seen[0].model.get_output_embeddings()
    assert given[0].keep_ids is not None and seen[0].keep_ids is None and head.out_features == seen[0].vocab


def test_compare_shows_the_change_between_two_saved_results(cli_models, prompts_file, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    bench(str(cli_models["target"]), "-d", "ngram", "--prompts", prompts_file, "-n", "4", "-r", "1", "--json", str(a))
    doc = json.loads(a.read_text())
    for row in doc["rows"]:
        row["tok_s"]["median"] *= 2
    doc["environment"]["packages"]["torch"] = "9.9"
    b.write_text(json.dumps(doc))
    shown = bench("--compare", str(a), str(b))
    assert "+100.0%" in shown.stdout and "environment packages.torch" in shown.stdout
    diff = json.loads(bench("--compare", str(a), str(b), "--json", "-").stdout)
    assert {r["change"] for r in diff["rows"]} == {1.0}


def test_compare_refuses_a_file_that_is_not_a_result(tmp_path):
    other = tmp_path / "x.json"
    other.write_text("{}")
    result = invoke("bench", "--compare", str(other), str(other))
    assert result.exit_code == 2 and "is not a specx bench result" in result.stderr


def test_plot_writes_a_png(cli_models, prompts_file, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "plot.png"
    bench(str(cli_models["target"]), "-d", "ngram", "--prompts", prompts_file, "-n", "4", "-r", "1", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_clear_error_before_any_work(cli_models, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = invoke("bench", str(cli_models["target"]), "--plot", "x.png")
    assert result.exit_code == 1 and "needs matplotlib" in result.stderr and "specx[bench]" in result.stderr


@pytest.mark.parametrize("args, fragment", [
    (["-k", "0"], "-k must be between 1"), (["--repeats", "0"], "--repeats must be at least 1"),
    (["--draft-policy", "psychic"], "unknown draft policy"), (["--prompts", "/nonexistent.toml"], "not found"),
    (["--plot", "x.jpg"], "PNG"), (["--peer", "vllm"], "unknown peer"),
    (["--json", "/nonexistent/r.json"], "does not exist"), (["-c", "k=4"], "names no drafter"),
    (["-c", "drafter=ngram,speed=9"], "cannot read --config"), (["-c", "tuned"], "no tuned setting"),
    (["--quant", "int3"], "int3"), (["--tree", "99"], "--tree"), (["-c", "drafter=ngram,tree=x"], "integers"),
])
def test_bad_options_fail_with_one_usage_error(cli_models, args, fragment):
    result = invoke("bench", str(cli_models["target"]), *args)
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0]


def test_atomic_write_never_leaves_half_a_file(tmp_path, monkeypatch):
    from specx.state import atomicio

    dest = tmp_path / "x.json"
    atomicio.atomic_write(dest, "old")

    def broken(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomicio.os, "replace", broken)
    with pytest.raises(OSError):
        atomicio.atomic_write(dest, "new" * 1000)
    assert dest.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_bench_and_tune_help_do_not_import_torch():
    """`specx bench --help` and `specx tune --help` stay instant."""
    import subprocess

    code = ("import sys\nfrom typer.testing import CliRunner\nfrom specx.cli import app\nr = CliRunner()\n"
            "assert r.invoke(app, ['bench', '--help']).exit_code == 0\n"
            "assert r.invoke(app, ['tune', '--help']).exit_code == 0\n"
            "print([m for m in ('torch', 'transformers') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_real_model_bench_with_peers_matches_the_baseline(prompts_file, tmp_path):
    """SmolLM2-135M (fixture GGUF), ngram and transformers' prompt lookup: schema-valid, greedy outputs agree."""
    from conftest import fixture_model

    model = fixture_model("smollm2-135m")
    prompts = tmp_path / "real.toml"
    prompts.write_text('[[prompt]]\ncategory = "rewrite"\ntext = "Repeat this list exactly: apple, banana, cherry, '
                       'date, elderberry, fig, grape."\n[[prompt]]\ncategory = "chat"\ntext = "Name a colour."\n')
    result = bench(str(model), "-d", "ngram", "--draft-policy", "fixed", "--prompts", str(prompts), "-n", "24", "-r", "1", "--peer", "hf",
                   "--json", "-", "--dtype", "float32")
    doc = json.loads(result.stdout)
    Draft202012Validator(SCHEMA).validate(doc)
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert set(overall) == {"none", "ngram k=4 fixed", "hf-lookup"}
    assert overall["ngram k=4 fixed"]["outputs_matched"] == 2


@pytest.mark.slow
def test_real_model_stock_peer_loads_the_gguf_through_transformers_alone(prompts_file, tmp_path):
    """SmolLM2-135M (fixture GGUF): transformers' own load of the same file generates the rows' tokens."""
    from conftest import fixture_model

    model = fixture_model("smollm2-135m")
    prompts = tmp_path / "real.toml"
    prompts.write_text('[[prompt]]\ncategory = "rewrite"\ntext = "Repeat this list exactly: apple, banana, cherry."\n')
    result = bench(str(model), "-d", "ngram", "--draft-policy", "fixed", "--prompts", str(prompts), "-n", "16", "-r", "1", "--no-warmup",
                   "--peer", "hf-stock-generate", "--peer", "hf-stock-lookup", "--json", "-")
    overall = {r["config"]: r for r in json.loads(result.stdout)["rows"] if r["category"] == "overall"}
    assert set(overall) == {"none", "ngram k=4 fixed", "hf-stock-generate", "hf-stock-lookup"}
    stock = ("hf-stock-generate", "hf-stock-lookup")
    assert all("transformers' own layers" in overall[row]["precision"] for row in stock)
    assert overall["hf-stock-generate"]["tok_s"]["median"] > 0 and overall["hf-stock-generate"]["outputs_compared"] == 1


def test_an_unwritable_data_dir_still_reports(cli_models, prompts_file, tmp_path, monkeypatch):
    from test_tune import unwritable_home

    monkeypatch.setenv("SPECX_HOME", unwritable_home(tmp_path))
    result = bench(str(cli_models["target"]), "-d", "ngram", "--prompts", prompts_file, "-n", "4", "-r", "1",
                   "--no-warmup")
    assert "overall" in result.stdout and "warning: the result was not saved" in result.stderr


def test_the_default_is_a_quick_look_at_what_specx_run_does(cli_models, prompts_file):
    """With no drafter, policy, k or --config named, the rows are the baseline and what `specx run MODEL`
    runs (drafter auto as it picks, policy auto, k as it takes it), and the bundled suite shrinks to its
    first prompt per category (--full: all of it)."""
    from specx.bench import suite
    from specx.cli.bench import FULL_REPEATS, QUICK_REPEATS, plan
    from specx.policy.policy import AUTO_K_MAX

    target = str(cli_models["target"])
    args = (None, None, None, 0.4, 8, QUICK_REPEATS, None, "auto", 0.0, 0, None, None)
    _, configs, prompts, _, run = plan(target, *args)
    # the tiny target runs on specx's decoder and names no model drafter: it drafts for itself and copies
    assert [c.label for c in configs] == ["none", f"self+ngram k={AUTO_K_MAX} auto"]
    assert [p.category for p in prompts] == suite.categories(suite.bundled()) and run.max_tokens == 8
    assert plan(target, *args, full=True)[2] == suite.bundled() and QUICK_REPEATS < FULL_REPEATS
    doc = json.loads(bench(target, "--prompts", prompts_file, "-n", "4", "-r", "1", "--no-warmup", "--json", "-").stdout)
    assert [c["label"] for c in doc["configs"]] == ["none", f"self+ngram k={AUTO_K_MAX} auto"]


def test_tree_widths_are_a_grid_axis_named_in_the_rows(cli_models, prompts_file):
    """--tree 0 --tree 8 --tree -1 runs each configuration with chains and trees, the width in its name; a
    --config's tree= too; greedy trees give the baseline's tokens."""
    from specx.cli.bench import plan

    target = str(cli_models["target"])
    _, configs, *_ = plan(target, ["ngram"], ["fixed"], [4], 0.4, 8, 1, None, "auto", 0.0, 0, None, None,
                          trees=[0, 8, -1])
    assert [c.label for c in configs] == ["none", "ngram k=4 fixed", "ngram k=4 fixed tree 8",
                                          "ngram k=4 fixed tree auto"]
    assert [c.tree for c in configs] == [0, 0, 8, -1]
    doc = json.loads(bench(target, "-d", "ngram", "--draft-policy", "fixed", "-k", "4", "--tree", "8",
                           "-c", "drafter=ngram,k=4,tree=-1", "--prompts", prompts_file, "-n", "6", "-r", "1",
                           "--no-warmup", "--json", "-").stdout)
    assert [(c["label"], c["tree"]) for c in doc["configs"]] == [
        ("none", 0), ("ngram k=4 fixed tree 8", 8), ("ngram k=4 fixed tree auto", -1)]
    overall = {r["config"]: r for r in doc["rows"] if r["category"] == "overall"}
    assert overall["ngram k=4 fixed tree 8"]["outputs_matched"] == overall["ngram k=4 fixed tree 8"]["outputs_compared"]


def test_the_default_row_follows_the_settings_a_run_reads(cli_models):
    """`draft_policy = "fixed"` in the config file: `specx run` drafts k=4 fixed, so the bench's row does."""
    from specx.cli.bench import plan
    from specx.state import settings

    settings.write_config({"draft_policy": "fixed"})
    _, configs, *_ = plan(str(cli_models["target"]), None, None, None, 0.4, 8, 1, None, "auto", 0.0, 0, None, None)
    assert [c.label for c in configs] == ["none", "self+ngram k=4 fixed"]


def test_the_time_left_counts_measured_runs_only(monkeypatch):
    """Warm-ups are short and unmeasured: the estimate is the time per measured run times the runs left."""
    import time

    from specx.bench.runner import Sample
    from specx.cli.progress import ProgressBar

    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    sample = Sample("none", "p", "code", 0, 8, 10.0)
    with ProgressBar("bench", 4) as advance:   # stderr is not a terminal here: one line per measured run
        bar = advance.__self__
        now[0] = 1.0
        advance("warm-up none", None)          # the clock restarts after the warm-ups
        assert bar.left() == ""
        now[0] = 11.0
        advance("none", sample)
        assert bar.left() == "~20s left"       # 10 s for one measured run, two runs left
