"""Defaults: flags > SPECX_* > config file > tuned > preset > built-in; the file is checked and written atomically."""
from __future__ import annotations

import json

import pytest
from cli_helpers import cli_models, invoke, one_thread  # noqa: F401  (fixtures)

from specx import presets
from specx.state import settings
from specx.errors import UsageError


def test_precedence_flag_env_config_tuned_preset_builtin(isolated_home):
    settings.write_config({"k": 5, "max_tokens": 100, "temperature": 0.5, "model": "smollm2"})
    env = {"SPECX_K": "6", "SPECX_MAX_TOKENS": "200"}
    tuned = lambda model, so_far: {"k": 7, "draft_policy": "heuristic", "temperature": 0.9}  # noqa: E731
    values = settings.resolve({"k": 8}, environ=env, tuned=tuned)
    assert values["k"] == (8, "flag")
    assert values["max_tokens"] == (200, "environment")
    assert values["temperature"] == (0.5, "config")
    assert values["draft_policy"] == ("heuristic", "tuned")
    assert values["dtype"] == ("auto", "built-in")


def test_preset_k_ranks_below_config(isolated_home):
    assert settings.resolve({"model": "smollm2"}, environ={}, preset=presets.defaults)["k"][1] == "preset"
    settings.write_config({"k": 2})
    assert settings.resolve({"model": "smollm2"}, environ={}, preset=presets.defaults)["k"] == (2, "config")


def test_tuned_hook_receives_the_model_and_lower_layers_do_not_leak(isolated_home):
    seen = []
    settings.resolve({}, environ={"SPECX_MODEL": "m.gguf"}, tuned=lambda m, s: seen.append((m, s)) or {})
    assert seen == [("m.gguf", {"model": "m.gguf"})]


def test_set_unset_round_trip_and_atomic_file(isolated_home):
    settings.set_value("k", "6")
    settings.set_value("stats", "off")
    settings.set_value("drafter", 'a "quoted" \\ name')
    assert settings.read_config() == {"k": 6, "stats": False, "drafter": 'a "quoted" \\ name'}
    assert settings.unset_value("k") and not settings.unset_value("k")
    left = [p.name for p in settings.config_file().parent.iterdir() if p.name != "config.toml.lock"]
    assert left == ["config.toml"]   # no temp left


@pytest.mark.parametrize("text, needle", [
    ("k = 3\nmax_tokns = 5\n", "line 2"),
    ("k = 3\n\ndraft_policy = \"sometimes\"\n", "line 3"),
    ("k = 3\nk = 4\n", "line 2"),
    ("k = [\n", "line 1"),
])
def test_broken_config_names_file_and_line(isolated_home, text, needle):
    path = settings.config_file()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(UsageError) as e:
        settings.read_config()
    assert str(path) in e.value.message and needle in e.value.message


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(UsageError) as e:
        settings.set_value("max_token", "3")
    assert "max_tokens" in e.value.hint


def test_bad_environment_value_is_a_usage_error():
    with pytest.raises(UsageError, match="SPECX_TEMPERATURE"):
        settings.from_environment({"SPECX_TEMPERATURE": "hot"})


def test_config_cli_show_set_unset_path(isolated_home):
    assert invoke("config", "set", "max_tokens", "7").exit_code == 0
    shown = json.loads(invoke("config", "show", "--json").stdout)
    assert shown["max_tokens"] == {"value": 7, "source": "config"}
    assert invoke("config", "path").stdout.strip() == str(settings.config_file())
    result = invoke("config", "set", "colour", "never")
    assert result.exit_code == 2 and "did you mean `color`" in result.stderr
    assert invoke("config", "unset", "max_tokens").exit_code == 0
    assert json.loads(invoke("config", "show", "--json").stdout)["max_tokens"]["source"] == "built-in"


def _done(stdout: str) -> dict:
    return [json.loads(line) for line in stdout.splitlines() if '"done"' in line][-1]


def test_run_uses_config_env_and_flags_in_order(isolated_home, cli_models, one_thread):
    target = str(cli_models["target"])
    settings.write_config({"max_tokens": 3, "drafter": "none", "model": target})
    assert _done(invoke("run", target, "w5 w6", "--json").stdout)["stats"]["new_tokens"] == 3
    done = _done(invoke("run", target, "w5 w6", "--json", env={"SPECX_MAX_TOKENS": "4"}).stdout)
    assert done["stats"]["new_tokens"] == 4 and done["stats"]["drafter"] == "none"
    done = _done(invoke("run", target, "w5 w6", "--json", "-n", "2", env={"SPECX_MAX_TOKENS": "4"}).stdout)
    assert done["stats"]["new_tokens"] == 2


def test_run_with_a_configured_model_takes_a_lone_prompt(isolated_home, cli_models, one_thread):
    settings.write_config({"max_tokens": 2, "model": str(cli_models["target"])})
    result = invoke("run", "w5 w6", "--json")
    assert result.exit_code == 0, result.stderr
    assert _done(result.stdout)["stats"]["prompt_tokens"] == 2
    assert "model: " in result.stderr and "config file" in result.stderr
