"""Options are resolved once (flags > SPECX_* > config > tuned > preset > built-in), checked when made,
and every way in builds a prompt's ids with one function."""
from __future__ import annotations

import dataclasses

import pytest
from cli_helpers import cli_models  # noqa: F401  (fixture)

from specx import options
from specx.errors import UsageError
from specx.policy import tuned
from specx.policy.policy import AUTO_K_MAX
from specx.state import settings


def test_each_value_comes_from_its_highest_layer_and_says_which(cli_models):
    """A tuned setting fills what flags, SPECX_* and the config file left unset, and is said in one note;
    the tuned policy runs guarded only when the user left the policy to `auto`."""
    target = str(cli_models["target"])
    tuned.record(tuned.make_key(target, "ngram"),
                 tuned.TunedSetting("ngram", 3, "fixed", tuned_at="2026-11-23T04:00:00Z", speedup=1.5), [])
    settings.write_config({"confidence": 0.6})
    o = options.resolve({"model": target, "max_tokens": 9}, environ={"SPECX_TEMPERATURE": "0.0"})
    assert (o.model.drafter, o.model.k, o.run.draft_policy) == ("ngram", 3, "fixed") and o.run.guard
    assert {n: o.sources[n] for n in ("max_tokens", "temperature", "confidence", "k", "dtype")} == {
        "max_tokens": "flag", "temperature": "environment", "confidence": "config", "k": "tuned", "dtype": "built-in"}
    assert o.notes == ("tuned: k=3 fixed with drafter ngram, tuned 2026-11-23 (1.50× plain decoding); "
                       "--confidence from the command line overrides it",)
    chosen = options.resolve({"model": target, "draft_policy": "heuristic"}, environ={"SPECX_K": "5"})
    assert (chosen.model.k, chosen.run.draft_policy, chosen.run.guard) == (5, "heuristic", False)
    untuned = options.resolve({"model": target}, tuned=False, environ={})
    assert (untuned.model.drafter, untuned.model.k, untuned.run.draft_policy) == ("auto", AUTO_K_MAX, "auto")


def test_values_are_checked_when_the_options_are_made():
    """Whichever way options are built, a bad value is one UsageError and they cannot change afterwards."""
    with pytest.raises(UsageError, match="draft tokens"):
        options.ModelOptions("m", k=65)
    with pytest.raises(UsageError, match="--draft-quant"):
        options.ModelOptions("m", draft_quant="nf4")
    with pytest.raises(UsageError, match="draft policy"):
        options.RunOptions(draft_policy="sometimes")
    with pytest.raises(UsageError, match="stop string"):
        options.from_keywords("m", stop=("",))
    with pytest.raises(UsageError, match="no model given"):
        options.resolve({}, environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.RunOptions().max_tokens = 3


def test_the_python_api_takes_keywords_over_built_ins_only(monkeypatch):
    """`specx.generate(model, prompt, **kw)`: the keywords and the built-ins; a program's options do not
    move with SPECX_* or the config file; an unknown keyword is a TypeError."""
    monkeypatch.setenv("SPECX_MAX_TOKENS", "7")
    o = options.from_keywords("m", k=3, temperature=0.5, top_k=0, stop=["x"])
    assert (o.model.k, o.run.max_tokens, o.run.sampling.top_k, o.run.stop) == (3, 512, None, ("x",))
    assert o.sources["k"] == "argument" and o.sources["max_tokens"] == "built-in"
    with pytest.raises(TypeError, match="draft_tokens"):
        options.from_keywords("m", draft_tokens=3)


@pytest.mark.parametrize("template", [True, False])
def test_a_chat_turn_and_a_run_build_the_same_ids(cli_models, template):
    """The first chat turn's ids are `specx run`'s for the same message and system (chat template or raw)."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from specx.api import prompt_ids
    from specx.engine.session import ChatSession

    tok = AutoTokenizer.from_pretrained(cli_models["target"])
    tok.chat_template = ("{% for m in messages %}<{{ m.role }}> {{ m.content }} {% endfor %}"
                         "{% if add_generation_prompt %}<assistant>{% endif %}") if template else None
    session = ChatSession(SimpleNamespace(target=SimpleNamespace(tokenizer=tok)), system="w3 w4")
    ids = session.render([{"role": "user", "content": "w5 w6"}])
    assert ids == prompt_ids(tok, "w5 w6", "w3 w4") and len(ids) >= 4
    with pytest.raises(UsageError, match="empty"):
        prompt_ids(tok, "  ")
