"""Chat sessions: each turn equals a fresh greedy run on the whole conversation, and prefills only new tokens."""
from __future__ import annotations

import pytest
from conftest import fixture_model, tiny_lm

from specx.api import Pair
from specx.drafters.model import ModelDrafter
from specx.drafters.ngram import NgramDrafter
from specx.drafters.hybrid import HybridDrafter
from specx.engine.loop import Generation
from specx.engine.session import ChatSession, common_prefix
from specx.policy.policy import AUTO_K_MAX, DEFAULT_K
from specx.engine.types import Round, Sampling

# A chat template over the word vocabulary: w2 = system, w3 = user, w4 = assistant, w1 (EOS) ends a turn.
WORD_TEMPLATE = ("{% for m in messages %}{{ {'system': 'w2', 'user': 'w3', 'assistant': 'w4'}[m['role']] }} "
                 "{{ m['content'] }} w1 {% endfor %}{% if add_generation_prompt %}w4 {% endif %}")


def counting(lm):
    """Record the length of every prefill forward (last_only=True) of this LM."""
    forward, lm.prefilled = lm.forward, []

    def wrapped(ids, last_only=False):
        if last_only:
            lm.prefilled.append(len(ids))
        return forward(ids, last_only)

    lm.forward = wrapped
    return lm


def make_pair(drafter: str, seed: int = 0, **kw) -> Pair:
    target = counting(tiny_lm(seed=seed, **kw))
    target.tokenizer.chat_template = WORD_TEMPLATE
    if drafter in ("model", "hybrid"):
        small = counting(tiny_lm(seed=seed + 1, layers=1, **kw))
        model = ModelDrafter(small, target.vocab_size, target.vocab_size)
        return Pair(target, HybridDrafter(NgramDrafter(), model) if drafter == "hybrid" else model, 3, "")
    return Pair(target, NgramDrafter(), 3, "")


def tokens(events) -> list[int]:
    return [t for e in events if isinstance(e, Round) for t in e.token_ids]


def fresh_tokens(pair: Pair, ids: list[int], max_tokens: int) -> list[int]:
    from specx.engine.types import Sampling

    return tokens(Generation(pair.target, pair.drafter, ids, k=pair.k, max_tokens=max_tokens, sampling=Sampling()))


USER_TURNS = ["w25 w26 w27", "w28 w29", "w30 w25 w26 w31", "w32"]  # (w1x would split: w1 is special)


@pytest.mark.parametrize("drafter", ["model", "ngram", "hybrid"])
def test_each_turn_equals_a_fresh_run_and_prefills_only_new_tokens(drafter):
    pair = make_pair(drafter)
    session = ChatSession(pair, system="w23 w24", max_tokens=12)
    fresh = make_pair(drafter)   # the same weights, separate caches
    previous: list[int] = []   # the last turn's prompt and answer
    last_prompt = 0
    for user in USER_TURNS:
        held = pair.target.held   # what the target's cache holds: the last turn's tokens but perhaps its last
        assert held == previous[:len(held)] and len(held) >= len(previous) - 1
        turn = session.ask(user)
        before = len(pair.target.prefilled)
        assert turn.reuse == min(common_prefix(turn.ids, held), len(turn.ids) - 1)
        got = tokens(list(turn))
        assert got == fresh_tokens(fresh, turn.ids, 12)
        # only the new tokens (and the last answer token, which the target never saw) are forwarded
        assert sum(pair.target.prefilled[before:]) == turn.prefilled <= len(turn.ids) - turn.reuse
        assert turn.reuse >= last_prompt   # the whole last prompt, at least, was reused
        previous, last_prompt = turn.ids + got, len(turn.ids)
    assert [m["role"] for m in session.messages] == ["user", "assistant"] * len(USER_TURNS)


def test_cancelled_turn_is_not_kept_and_the_next_turn_is_still_exact():
    pair, fresh = make_pair("model"), make_pair("model")
    session = ChatSession(pair, max_tokens=12)
    list(session.ask(USER_TURNS[0]))
    turn = session.ask(USER_TURNS[1])
    for event in turn:
        turn.stop.set()     # Ctrl-C after the first round
    assert event.reason == "interrupted" and len(session.messages) == 2
    turn = session.ask(USER_TURNS[2])
    assert tokens(list(turn)) == fresh_tokens(fresh, turn.ids, 12)


def test_full_context_drops_the_oldest_turns_with_a_note():
    notes: list[str] = []
    pair, fresh = make_pair("ngram", max_pos=48), make_pair("ngram", max_pos=48)
    session = ChatSession(pair, max_tokens=8, notify=notes.append)
    for user in USER_TURNS * 2:
        turn = session.ask(user)
        assert len(turn.ids) <= 48 - 8
        assert tokens(list(turn)) == fresh_tokens(fresh, turn.ids, 8)
    assert any("dropped the oldest" in n for n in notes)


def test_hard_interrupt_forgets_the_caches():
    pair, fresh = make_pair("model"), make_pair("model")
    session = ChatSession(pair, max_tokens=12)
    list(session.ask(USER_TURNS[0]))
    turn = session.ask(USER_TURNS[1])
    next(iter(turn))            # abandoned mid-answer, as after a KeyboardInterrupt inside torch
    turn = session.ask(USER_TURNS[2])
    assert turn.reuse == 0
    assert tokens(list(turn)) == fresh_tokens(fresh, turn.ids, 12)


@pytest.mark.slow
def test_smollm2_chat_template_reuses_the_conversation():
    """The real SmolLM2 tokenizer and chat template (tiny random weights): exact, and only new tokens prefilled."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from specx.models.lm import LM
    from specx.models.resolve import resolve
    from specx.models.store import any_copy

    path = fixture_model("smollm2-135m")
    copy = any_copy(resolve(str(path)).path)
    tok = AutoTokenizer.from_pretrained(copy) if copy else AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    assert "im_start" in tok.chat_template

    def lm(seed):
        cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                          eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
        torch.manual_seed(seed)
        return counting(LM(LlamaForCausalLM(cfg).double().eval(), tok, f"smol-{seed}"))

    pair = Pair(lm(0), ModelDrafter(lm(1), len(tok), len(tok)), 3, "")
    fresh = Pair(lm(0), ModelDrafter(lm(1), len(tok), len(tok)), 3, "")
    session = ChatSession(pair, system="You are terse.", max_tokens=10)
    previous = []
    for user in ("Hi there!", "What is 2 + 2?", "Thanks, bye."):
        turn = session.ask(user)
        before = len(pair.target.prefilled)
        got = tokens(list(turn))
        assert got == fresh_tokens(fresh, turn.ids, 10)
        assert sum(pair.target.prefilled[before:]) == turn.prefilled <= len(turn.ids) - turn.reuse
        assert not previous or turn.reuse >= len(previous)
        previous = turn.ids


@pytest.mark.parametrize("policy, k", [("auto", AUTO_K_MAX), ("fixed", DEFAULT_K), ("heuristic", DEFAULT_K)])
def test_a_pair_loaded_without_k_drafts_as_specx_run_does_without_k(policy, k):
    """`specx.load(model)` without k: auto may draft up to AUTO_K_MAX and the other policies take
    DEFAULT_K, as `specx run` without -k (auto was held to 4 in Python); a k given holds for all."""
    from specx import stream
    from specx.engine.types import Done

    pair = make_pair("model")
    pair.k, pair.k_chosen = AUTO_K_MAX, False          # what prepare(k=None) leaves
    done = [e for e in stream(pair, "w25 w26", max_tokens=6, draft_policy=policy, raw=True)
            if isinstance(e, Done)]
    assert done[0].stats.k == k and pair.policy(policy, 0.4, Sampling()).k_max == k
    pair.k, pair.k_chosen = 8, True
    assert pair.policy(policy, 0.4, Sampling()).k_max == 8
