"""A tuned policy that `auto` chose (`guard`) turns speculation off where it loses; a model drafter sits out long prompts."""
from __future__ import annotations

import time

import pytest

from test_loop import plain_greedy

from specx.drafters.model import ModelDrafter
from specx.engine.draft import Draft, NoDrafter
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling
from specx.policy.base import Policy
from specx.policy.costmodel import CostModel
from specx.policy.guarded import Guarded
from specx.policy.knobs import KNOBS
from specx.policy.policy import make

GUARD_ROUNDS, PROBE_GAP, REFRESH_ROUNDS = KNOBS.guard_rounds, KNOBS.probe_gap, KNOBS.refresh_rounds

PLAIN_S = 0.100   # a plain step: 10 tok/s


def guarded(name: str = "confidence", guard: bool = True) -> Policy:
    policy = make(name, 4, 0.7, guard=guard)
    policy.update(0, 0, 0.0, PLAIN_S)   # the loop's first round is plain: it measures what drafting must beat
    return policy


def rounds(policy: Policy, n: int, tokens: int, seconds: float) -> list[int]:
    """n rounds as the loop runs them: a drafting round gives `tokens` in `seconds`, a plain one 1 in PLAIN_S."""
    ks = []
    for _ in range(n):
        k = policy.next_k()
        ks.append(k)
        if k:
            policy.update(k, tokens - 1, 0.3 * seconds, 0.7 * seconds)
        else:
            policy.update(0, 0, 0.0, PLAIN_S)
    return ks


def test_a_tuned_policy_goes_off_where_its_rounds_lose_says_so_and_comes_back_after_a_probe_that_pays():
    policy = guarded()
    assert rounds(policy, GUARD_ROUNDS, tokens=2, seconds=0.25) == [4] * GUARD_ROUNDS   # 8 tok/s vs 10
    assert policy.off and policy.notice.startswith("speculation off: the tuned k=4 confidence 0.7 gave 8.0 tok/s")
    assert f"plain decoding 10.0; trying again in {PROBE_GAP} tokens" in policy.notice
    policy.notice = ""
    assert rounds(policy, PROBE_GAP - 1, tokens=2, seconds=0.25) == [0] * (PROBE_GAP - 1)
    assert rounds(policy, GUARD_ROUNDS, tokens=4, seconds=0.2) == [4] * GUARD_ROUNDS          # 20 tok/s
    assert not policy.off and policy.notice.startswith("speculation on again: the tuned k=4 confidence 0.7 gave")


def test_a_probe_that_still_loses_waits_twice_as_long():
    policy = guarded("fixed")
    rounds(policy, GUARD_ROUNDS + PROBE_GAP - 1, tokens=2, seconds=0.25)
    assert rounds(policy, GUARD_ROUNDS, tokens=2, seconds=0.25) == [4] * GUARD_ROUNDS
    assert policy.off and policy.gap == 2 * PROBE_GAP
    assert rounds(policy, 2 * PROBE_GAP - 1, tokens=2, seconds=0.25) == [0] * (2 * PROBE_GAP - 1)
    assert policy.next_k() == 4


@pytest.mark.parametrize("tokens, seconds", [(3, 0.25), (2, 0.205)])   # 12 tok/s; 9.76: within the slack
def test_a_tuned_policy_that_keeps_up_stays_on(tokens, seconds):
    policy = guarded()
    ks = rounds(policy, 30, tokens, seconds)   # plain decoding timed again every REFRESH_ROUNDS (test_refresh)
    assert set(ks) <= {0, 4} and ks.count(0) <= 30 // REFRESH_ROUNDS and not policy.off and not policy.notice


def test_a_policy_the_user_chose_is_never_turned_off():
    for policy in (guarded("confidence", guard=False), guarded("heuristic", guard=False)):
        assert all(rounds(policy, 30, tokens=1, seconds=0.5)) and not getattr(policy, "off", False)
        assert not policy.notice and not policy.adaptive
    assert not isinstance(make("auto", 4, guard=True), Guarded)   # auto has its own switch


class SlowGuess(NoDrafter):
    """Drafts the same k tokens every round, 0.1 s a draft: far slower than a tiny model's plain step."""

    name = "slow-guess"

    def propose(self, seq, ask):
        time.sleep(0.1)
        return Draft([3] * ask.k, None)


def test_a_guarded_policy_falls_back_to_plain_decoding_with_identical_output(make_lm):
    """A drafter whose rounds are slower than plain decoding: the guard turns drafting off after
    GUARD_ROUNDS drafting rounds, says so in the run's notices, and the text is the target's own."""
    target = make_lm("llama", seed=1)
    drafter = SlowGuess()
    prompt = [0, 11, 12, 13]
    events = list(Generation(target, drafter, prompt, k=4, max_tokens=40, sampling=Sampling(),
                             policy=make("fixed", 4, guard=True)))
    tokens = [t for e in events if isinstance(e, Round) for t in e.token_ids]
    stats = events[-1].stats
    assert tokens == plain_greedy(target.model, prompt, 40, eos=1)
    assert any(n.startswith("speculation off: the tuned k=4 fixed") for n in stats.notices)
    plain = stats.rounds - stats.drafted_at[0]   # off after 6 drafting rounds, probed after 8 and 16 plain ones
    assert stats.drafted_at[0] <= 3 * GUARD_ROUNDS and plain >= (PROBE_GAP - 1) + (2 * PROBE_GAP - 1)


@pytest.mark.parametrize("policy, guard, prompt_len, read_s, sits_out", [
    ("auto", False, 20, 1.0, True), ("confidence", True, 20, 1.0, True), ("auto", False, 8, 1.0, False),
    ("confidence", False, 20, 1.0, False), ("auto", False, 20, 1e-9, False), ("confidence", True, 20, 1e-9, False)])
def test_a_model_drafter_sits_out_a_prompt_over_twice_its_window_too_dear_to_read(make_lm, monkeypatch, policy,
                                                                                   guard, prompt_len, read_s, sits_out):
    """Under `auto` or a tuned policy auto chose, a model drafter that would see less than half of
    the prompt (window 4, more than 8 unread tokens) and for which reading all of it costs more than
    the policy's budget drafts nothing that answer, never runs, and says so; a shorter prompt, a
    policy the user chose, or reading that fits the budget (then it reads the whole prompt) keeps it
    drafting. The output is the target's own."""
    target = make_lm("qwen2", seed=1)
    draft_lm = make_lm("qwen2", seed=2, layers=1)
    drafter = ModelDrafter(draft_lm, target.vocab_size, target.vocab_size, 4)
    drafter.read_s = read_s   # seconds per token read, against a budget of 1 s
    monkeypatch.setattr(CostModel, "read_budget", lambda self, tokens: 1.0)
    prompt = [0] + [20 + i % 7 for i in range(prompt_len - 1)]
    events = list(Generation(target, drafter, prompt, k=4, max_tokens=12, sampling=Sampling(),
                             policy=make(policy, 4, guard=guard)))
    tokens = [t for e in events if isinstance(e, Round) for t in e.token_ids]
    stats = events[-1].stats
    assert tokens == plain_greedy(target.model, prompt, 12, eos=1)
    assert (draft_lm.forward_s == 0 and stats.drafted == 0) is sits_out
    assert (drafter.reading == 0) is (read_s < 1 and (policy == "auto" or guard))   # read whole, no window
    assert any(n.startswith("drafter: off for this answer") for n in stats.notices) is sits_out
