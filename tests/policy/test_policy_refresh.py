"""Drafting is priced against plain decoding timed recently: a shared CPU's speed moves within an answer."""
from __future__ import annotations

import pytest

from dataclasses import replace

from specx.policy.base import Policy
from specx.policy.costmodel import CostModel
from specx.policy.knobs import KNOBS
from specx.policy.policy import make

DECAY, REFRESH_ROUNDS = KNOBS.decay, KNOBS.refresh_rounds


def drive(policy: Policy, n: int, plain_s: float, tokens: list[int], round_s: float) -> list[int]:
    """n rounds as the loop runs them: a plain round takes `plain_s`; drafting rounds draft 2 tokens,
    take `round_s` (a third drafting) and give tokens[i % len(tokens)]."""
    ks = []
    for _ in range(n):
        k = policy.next_k()
        ks.append(k)
        if not k:
            policy.update(0, 0, 0.0, plain_s)
            continue
        got = tokens[sum(1 for x in ks if x) % len(tokens)]
        policy.update(2, got - 1, round_s / 3, 2 * round_s / 3)
    return ks


def started(name: str, guard: bool = False, knobs=KNOBS) -> Policy:
    policy = make(name, 4, 0.7, CostModel(knobs=knobs), guard=guard)
    policy.update(0, 0, 0.0, 0.100)   # the loop's first round is plain
    return policy


def test_a_forward_timed_long_ago_gives_way_to_a_new_time_at_once():
    recent, old = CostModel(), CostModel()
    for cost in (recent, old):
        cost.observe(0, 0, 0.0, 0.100)
    for _ in range(10):
        old.observe(2, 1, 0.02, 0.15)
    recent.observe(0, 0, 0.0, 0.070)
    old.observe(0, 0, 0.0, 0.070)
    assert recent.verify_s[1] == pytest.approx(DECAY * 0.100 + (1 - DECAY) * 0.070)   # a round ago: 15%
    assert old.verify_s[1] == pytest.approx(DECAY ** 11 * 0.100 + (1 - DECAY ** 11) * 0.070)
    assert CostModel.following(old).age(1) == REFRESH_ROUNDS   # carried over: as old as a refresh


def test_while_drafting_leads_plain_decoding_by_little_plain_decoding_is_timed_again_on_schedule():
    policy = started("auto")
    ks = drive(policy, 40, 0.100, tokens=[3, 1], round_s=0.17)   # 11.8 tok/s against 10
    plain = [i for i, k in enumerate(ks) if not k]
    assert plain and all(b - a == REFRESH_ROUNDS + 1 for a, b in zip(plain, plain[1:])) and not policy.off
    assert ks.count(0) <= len(ks) // REFRESH_ROUNDS


def test_drafting_that_leads_by_far_is_never_interrupted():
    policy = started("auto")
    assert drive(policy, 40, 0.100, tokens=[3], round_s=0.12).count(0) == 0   # 25 tok/s against 10


@pytest.mark.parametrize("name, guard", [("auto", False), ("confidence", True)])
def test_drafting_stops_once_plain_decoding_has_sped_up_mid_answer(name, guard):
    """Drafting paid while a plain step took 100 ms; the machine speeds plain steps up to 70 ms and
    leaves longer forwards as they were (as fbgemm fp16 did on a shared AVX-512 CPU): the next
    time plain decoding is timed shows drafting losing, and it goes off with a notice."""
    policy = started(name, guard)
    drive(policy, 12, 0.100, tokens=[3, 1], round_s=0.17)
    assert not policy.off
    drive(policy, 2 * REFRESH_ROUNDS + 2, 0.070, tokens=[3, 1], round_s=0.17)
    assert policy.off and policy.notice.startswith("speculation off")

    never = replace(KNOBS, refresh_rounds=10 ** 6)   # the same answer never timing plain decoding
    stale = started(name, guard, never)              # again keeps drafting at a loss
    drive(stale, 12, 0.100, tokens=[3, 1], round_s=0.17)
    drive(stale, 2 * REFRESH_ROUNDS + 2, 0.070, tokens=[3, 1], round_s=0.17)
    assert not stale.off
