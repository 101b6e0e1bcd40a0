"""`auto` carries what one answer measured of the machine and the drafter into the next on the same pair."""
from __future__ import annotations

import pytest
from test_session import make_pair, tokens

from specx import stream
from specx.policy.costmodel import MODEL, CostModel
from specx.policy.knobs import KNOBS
from specx.policy.policy import make
from specx.engine.types import Sampling

GREEDY, SAMPLED = Sampling(), Sampling(temperature=0.8, seed=1)


def measured() -> CostModel:
    model = CostModel(verify_s={1: 0.35, 5: 0.70}, draft_step_s=0.08)
    model.calibration.add((0.95,) * 6, 6)
    model.track(MODEL).add(4, 0)
    return model


def test_a_following_model_keeps_costs_and_calibration_and_forgets_the_text():
    before = measured()
    after = CostModel.following(before, moe=True)
    assert after.verify_s == before.verify_s and after.draft_step_s == pytest.approx(0.08) and after.moe
    assert after.calibration.acceptance(0.95) == pytest.approx(before.calibration.acceptance(0.95))
    assert after.acceptance == pytest.approx(CostModel().acceptance)   # acceptance of the text starts afresh
    after.verify_s[1] = 9.0
    after.calibration.add((0.95,) * 4, 0)
    assert before.verify_s[1] == pytest.approx(0.35)                    # the previous answer's model is untouched
    assert before.calibration.acceptance(0.95) > after.calibration.acceptance(0.95)


def test_with_costs_measured_the_first_rounds_draft_without_warm_up_or_plain_round():
    fresh = make("auto", 16)
    assert fresh.next_k() == KNOBS.warmup_k
    fresh.update(4, 4, 0.32, 0.7, made=4)
    assert fresh.next_k() == 0                      # the plain round that measures what drafting must beat
    carried = make("auto", 16, cost=CostModel.following(measured()))
    assert carried.next_k() == 16
    carried.update(3, 3, 0.24, 0.6, made=3)
    assert carried.next_k() == 16


def test_the_pair_hands_auto_answers_the_last_ones_costs_per_kind_of_sampling():
    pair = make_pair("model")
    first = pair.policy("auto", 0.4, GREEDY)
    first.cost.verify_s[1] = 0.123
    assert pair.policy("auto", 0.4, GREEDY).cost.verify_s == {1: 0.123}
    assert pair.policy("auto", 0.4, SAMPLED).cost.verify_s == {}       # sampled acceptance differs: apart
    pair.policy("fixed", 0.4, GREEDY).cost.verify_s[1] = 5.0           # only auto answers are remembered
    assert pair.policy("auto", 0.4, GREEDY).cost.verify_s == {1: 0.123}


@pytest.mark.parametrize("drafter", ["model", "hybrid"])
def test_answers_after_the_first_still_equal_plain_decoding(drafter):
    pair, plain = make_pair(drafter), make_pair("model")
    plain.k = 0
    prompt = "w25 w26 w27 w25 w26"
    for _ in range(3):
        events = list(stream(pair, prompt, max_tokens=24, draft_policy="auto", raw=True))
        reference = list(stream(plain, prompt, max_tokens=24, draft_policy="fixed", raw=True))
        assert tokens(events) == tokens(reference)
    assert pair.costs[True].verify_s   # the later answers did start from measured costs


def test_the_python_api_reuses_a_loaded_pair_and_what_it_measured():
    import specx

    pair, plain = make_pair("model"), make_pair("model")
    plain.k = 0
    first = specx.generate(pair, "w25 w26 w27", max_tokens=10, raw=True)
    measured = pair.costs[True]
    assert first == specx.generate(plain, "w25 w26 w27", max_tokens=10, raw=True, draft_policy="fixed")
    specx.generate(pair, "w28 w29", max_tokens=10, raw=True)
    assert pair.costs[True] is not measured and set(measured.verify_s) <= set(pair.costs[True].verify_s)


def test_over_a_session_of_answers_that_draft_little_the_carried_step_stays_the_drafters_step():
    """The real loop and drafters on a fake clock (replay_traces): prose the drafter mostly gets wrong, so
    drafting goes off and is probed after ever longer stretches of plain rounds, each probe starting with the
    drafter reading what it missed. Answer after answer the step the pair carries stays the drafter's 20 ms
    (counting the reading in, it carried 33-59 ms, and drafting looked dear in every answer after)."""
    from replay_traces import Trace, run

    for window in (8, 0):
        costs: list = []
        run(Trace("session", "prose", "hybrid", "auto", wrong=0.7, window=window, answers=4, max_tokens=128), costs)
        assert [c.draft_step_s for c in costs] == pytest.approx([0.02] * 4, rel=0.05)
