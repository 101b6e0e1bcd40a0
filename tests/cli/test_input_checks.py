"""Inputs that used to slip through validation (issue 33, item 5): NaN and out-of-range options and
settings, an empty stop string, malformed user presets, wrongly typed tuned and measured entries; and
option errors come before torch is imported."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from cli_helpers import ROOT, invoke, specx_env
from specx import presets
from specx.state import settings
from specx.options import RunOptions
from specx.errors import UsageError
from specx.engine.types import Sampling

# ---- options and settings ------------------------------------------------------------------------


@pytest.mark.parametrize("sampling", [Sampling(math.nan), Sampling(math.inf), Sampling(0.7, None, math.nan)])
def test_nan_and_infinite_sampling_options_are_refused(sampling):
    """NaN passes `< 0` and `0 < p <= 1`-style checks written the other way round: refuse non-finite values."""
    with pytest.raises(UsageError):
        RunOptions(16, sampling)


@pytest.mark.parametrize("key, value", [("temperature", "nan"), ("temperature", "inf"),
                                        ("top_p", "nan"), ("top_p", "0"), ("max_tokens", "0"), ("k", "999"),
                                        ("k", "65"), ("confidence", "1"), ("confidence", "nan")])
def test_config_set_refuses_values_a_run_would_refuse(key, value):
    """`specx config set` checks ranges, not only types: exit 2 and the file stays as it was."""
    result = invoke("config", "set", key, value)
    assert result.exit_code == 2, result.output
    assert not settings.config_file().exists()


def test_a_nan_in_the_config_file_is_refused_and_show_json_stays_valid_json():
    """A hand-edited `temperature = nan` is named with its line; `config show --json` never prints NaN."""
    settings.config_file().parent.mkdir(parents=True, exist_ok=True)
    settings.config_file().write_text("k = 4\ntemperature = nan\n")
    result = invoke("config", "show", "--json")
    assert result.exit_code == 2 and "line 2" in result.stderr
    settings.config_file().write_text("k = 4\n")
    shown = invoke("config", "show", "--json").stdout
    json.loads(shown, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def test_an_empty_stop_string_is_refused():
    """`--stop ""` would never match: a usage error, not silently ignored."""
    result = invoke("run", "/nonexistent/model.gguf", "hi", "--stop", "")
    assert result.exit_code == 2 and "stop" in result.stderr, result.output


OPTION_ERRORS = [["--temperature", "nan"], ["--top-p", "nan"], ["-k", "999"], ["--stop", ""], ["-n", "0"],
                 ["--draft-policy", "sometimes"], ["--quant", "int3"]]


@pytest.mark.parametrize("args", OPTION_ERRORS, ids=lambda a: " ".join(a))
def test_option_errors_come_before_torch_is_imported(args, tmp_path):
    """A bad option is exit 2 before the model is looked at and before torch is imported (was: 3-4.5 s of
    importing torch, then a model error or "unexpected RuntimeError" after loading)."""
    probe = ("import atexit, runpy, sys\n"
             "atexit.register(lambda: sys.stderr.write(f\"torch imported: {'torch' in sys.modules}\\n\"))\n"
             "sys.argv = ['specx'] + sys.argv[1:]\n"
             "runpy.run_module('specx', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", probe, "run", str(tmp_path / "missing.gguf"), "hi", *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=specx_env(SPECX_HOME=str(tmp_path / "home")), cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "torch imported: False" in proc.stderr and "error:" in proc.stderr


# ---- user presets ----------------------------------------------------------------------------------

BROKEN = {   # what the file holds after `name` and `description`, and the line of the mistake
    "quants-list": ("quants = [1]\n", 3),
    "short-sha256": ('[[mirrors]]\nkind = "pypi-wheel"\nwheel = "p==1"\nmember = "p/m.gguf"\nsha256 = "abc"\n', 7),
    "drafters-string": ('drafters = "smollm2"\n', 3),
    "repo-escapes": ('[target]\nrepo = "../../etc"\nsource = "https://x"\n', 4),
    "k-string": ('k = "four"\n', 3),
    "sampling-nan": ('[sampling]\ntemperature = nan\n', 4),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_a_malformed_user_preset_is_refused_alone_with_its_line(case, capfd):
    """One broken file in the presets folder: every other name still works (a warning names the file), and
    asking for that one is exit 2 with its file and line (was: "unexpected …" for every lookup, or a
    string of drafters read letter by letter)."""
    body, line = BROKEN[case]
    folder = presets.user_dir()
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('name = "mine"\ndescription = "a model of mine"\n' + body)
    assert presets.find("smollm2").name == "smollm2"
    assert "mine.toml" in capfd.readouterr().err
    assert invoke("show", "smollm2").exit_code == 0
    refused = invoke("show", "mine")
    assert refused.exit_code == 2, refused.output
    assert f"mine.toml line {line}:" in refused.stderr


def test_every_bundled_preset_passes_the_checks():
    """The checks accept what specx ships (bundled() parses them all through parse)."""
    assert len(presets.bundled()) > 20


# ---- tuned and measured stores ---------------------------------------------------------------------

def test_a_wrongly_typed_tuned_entry_is_skipped_with_one_note(monkeypatch):
    """`"speedup": "fast"` in tuned.json: that entry is skipped with one note and the run goes on untuned
    (was: every run of that pair failed)."""
    from specx.options import tuned_layer
    from specx.policy import tuned

    key = tuned.TunedKey("sha256:aa", "ngram", "cpu: test, 1 threads", "float32")
    tuned.record(key, tuned.TunedSetting("ngram", 5, speedup=1.3), [])
    data = json.loads(tuned.path().read_text())
    data["entries"][0]["setting"]["speedup"] = "fast"
    tuned.path().write_text(json.dumps(data))
    monkeypatch.setattr(tuned, "make_key", lambda *a, **kw: key)
    notes: list[str] = []
    values = {"model": "m", "drafter": "auto", "k": 4, "draft_policy": "auto", "confidence": 0.4, "dtype": "auto",
              "temperature": 0.0}
    assert tuned_layer(values, set(), "none", notes.append) == {}   # nothing taken: ("auto", 4, "auto", 0.4) stay
    assert len(notes) == 1 and "speedup" in notes[0] and "skipped" in notes[0]


@pytest.mark.parametrize("where", ["verify_s", "draft_step_s", "calibration"])
def test_nan_costs_in_measured_json_are_refused(where):
    """A NaN (or infinite) cost in measured.json reads as nothing measured: `auto` measures afresh."""
    from specx.policy import measured
    from specx.policy.costmodel import CostModel

    key = {"target": "t|1", "drafter": "ngram", "device": "cpu: test, 2 threads"}
    cost = CostModel(verify_s={1: 0.35, 5: 0.7}, draft_step_s=0.08)
    cost.calibration.add((0.95,) * 10, 9)
    assert measured.save(key, True, cost) and measured.load(key, True) is not None
    data = json.loads(measured.path().read_text())
    saved = data["entries"][0]["greedy"]
    if where == "verify_s":
        saved["verify_s"]["5"] = math.nan
    elif where == "draft_step_s":
        saved["draft_step_s"] = math.inf
    else:
        saved["calibration"] = {b: [math.nan, p] for b, (_, p) in saved["calibration"].items()}
    measured.path().write_text(json.dumps(data))
    assert measured.load(key, True) is None
