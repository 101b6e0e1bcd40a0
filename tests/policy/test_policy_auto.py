"""auto: the cost model, SmartSpec's k = 0, trimming, the drafter's stops; the output never changes."""
from __future__ import annotations

import math

import pytest
from test_policy_screens import run

from specx.drafters.model import ModelDrafter
from specx.engine.draft import Ask
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling
from specx.policy.base import Stops
from specx.policy.knobs import KNOBS
from specx.policy.policy import make


# --- auto: the cost model and SmartSpec's k = 0 ------------------------------------------------

def test_expected_tokens_follow_the_geometric_law():
    """E(k) = (1 − a^(k+1)) / (1 − a): 1 token at k = 0, k+1 tokens as a → 1."""
    from specx.policy.costmodel import CostModel

    model = _pooled(3.0, 1.0)   # no per-position evidence: one pooled rate
    a = model.acceptance
    assert a == pytest.approx(3.5 / 5)               # with the prior of one round, half accepted
    assert model.expected_tokens(0) == pytest.approx(1.0)
    assert model.expected_tokens(3) == pytest.approx(1 + a + a ** 2 + a ** 3)
    assert _pooled(1e9, 0.0).expected_tokens(4) == pytest.approx(5, rel=0.01)


def _pooled(accepted: float, rejected: float, **costs):
    from specx.policy.acceptance import Track
    from specx.policy.costmodel import CostModel

    return CostModel(**costs, tracks={"model": Track(accepted, rejected)})


def test_verify_time_is_interpolated_from_measured_sizes():
    from specx.policy.costmodel import CostModel

    model = CostModel(verify_s={1: 0.10, 5: 0.18})
    assert model.verify_time(3) == pytest.approx(0.14)
    # beyond the longest measured: along a + b·ln n through the two longest (CPU verification is concave)
    assert model.verify_time(25) == pytest.approx(0.18 + 0.08 * math.log(5) / math.log(5))
    assert CostModel(verify_s={5: 0.2}).verify_time(1) is None


def test_plain_decoding_cost_is_measured_never_extrapolated():
    """Extrapolating a 1-token forward from 2- and 17-token ones overstates it (CPU verification is
    not linear), which made drafting look paying; auto measures it in a plain round instead."""
    from specx.policy.costmodel import CostModel

    assert CostModel(verify_s={2: 0.55, 17: 0.9}).verify_time(1) is None
    policy = make("auto", 4)
    policy.update(4, 1, 0.2, 0.6)
    policy.update(1, 1, 0.05, 0.5)
    assert policy.next_k() == 0


def test_best_k_is_zero_when_drafting_costs_more_than_it_saves():
    """Flat verification and cheap drafting favour k > 0; an expensive drafter makes k = 0 best."""
    from specx.policy.costmodel import CostModel

    cheap = _pooled(8, 2, verify_s={1: 0.10, 5: 0.12}, draft_step_s=0.005)
    assert cheap.best_k(4) >= 3
    costly = _pooled(8, 2, verify_s={1: 0.10, 5: 0.30}, draft_step_s=0.08)
    assert costly.best_k(4) == 0
    assert "does not pay" in costly.explain(0)


def _drive(policy, rounds, draft_step_s, verify_s, acceptance):
    """Feed a policy synthetic rounds; returns the k it chose each round."""
    ks = []
    for _ in range(rounds):
        k = policy.next_k()
        ks.append(k)
        accepted = int(k * acceptance)
        policy.update(k, accepted, k * draft_step_s, verify_s(k + 1))
    return ks


def test_auto_turns_drafting_off_says_so_and_probes_on_schedule():
    """Expensive drafts: after warm-up, one plain round and enough evidence, k = 0 with a notice; probes
    probe_gap plain rounds later, then twice that."""
    MIN_JUDGED, PROBE_GAP = KNOBS.min_judged, KNOBS.probe_gap
    WARMUP_K, WARMUP_ROUNDS = KNOBS.warmup_k, KNOBS.warmup_rounds

    policy = make("auto", 4)
    ks = _drive(policy, 70, 0.08, lambda n: 0.1 + 0.05 * (n - 1), 0.5)
    assert ks[:WARMUP_ROUNDS] == [min(4, WARMUP_K)] * WARMUP_ROUNDS and ks[WARMUP_ROUNDS] == 0
    assert policy.off and policy.notice.startswith("speculation off")
    off_at = ks.index(0, WARMUP_ROUNDS + 1)   # after MIN_JUDGED drafted tokens were judged
    assert sum(min(k, k // 2 + 1) for k in ks[:off_at]) >= MIN_JUDGED
    probes = [i for i, k in enumerate(ks) if k and i > off_at]
    assert probes[0] - off_at == PROBE_GAP and probes[1] - probes[0] == 2 * PROBE_GAP


def test_auto_keeps_drafting_when_it_pays_and_turns_back_on():
    policy = make("auto", 4)
    ks = _drive(policy, 20, 0.002, lambda n: 0.1 + 0.01 * (n - 1), 1.0)
    assert not policy.off and ks[-1] == 4 and ks.count(0) == 1   # the one plain measuring round
    off = make("auto", 4)
    verify = lambda n: 0.1 + 0.01 * (n - 1)   # noqa: E731  (the same machine costs throughout)
    _drive(off, 24, 0.05, verify, 0.0)
    assert off.off
    off.notice = ""
    _drive(off, 40, 0.05, verify, 1.0)        # the text became easy to draft: the next probe pays
    assert not off.off and off.notice.startswith("speculation on again")


class SlowDrafter(ModelDrafter):
    """A drafter that costs far more than the target: auto must stop using it."""

    def propose(self, *args, **kw):
        import time

        time.sleep(0.03 * args[1].k)
        return super().propose(*args, **kw)


def test_auto_falls_back_to_plain_decoding_with_identical_output(make_lm):
    """k = 0 through the same loop: the output is unchanged, the decision is in the stats and events."""
    target, draft = make_lm("llama", seed=21), make_lm("llama", seed=22, layers=1)
    gen = Generation(target, SlowDrafter(draft, 96, 96), [0, 5, 9, 12, 5, 9], k=4, max_tokens=40,
                     sampling=Sampling(), policy=make("auto", 4))
    events = list(gen)
    tokens = [t for e in events if isinstance(e, Round) for t in e.token_ids]
    plain, _ = run(make_lm, make("fixed", 0), k=0, n=40)
    assert tokens == plain
    assert any(e.notice.startswith("speculation off") for e in events if isinstance(e, Round))
    assert gen.stats.notices and sum(1 for e in events if isinstance(e, Round) and e.drafted == 0) > 20


def test_a_drafter_that_is_wrong_first_and_then_right_for_long_gets_a_long_k():
    """Copying drafters (ngram) miss the first token often and then run: per-position rates see it."""
    from specx.policy.costmodel import CostModel

    model = CostModel(verify_s={1: 0.100, 9: 0.200}, draft_step_s=0.0)
    for _ in range(12):   # half the rounds miss at once, the other half copy all 8
        model.observe(8, 0, 0.0, 0.2)
        model.observe(8, 8, 0.0, 0.2)
    assert model.hazards(8)[0] == pytest.approx(0.5, abs=0.15)   # recent rounds weigh more
    assert min(model.hazards(8)[1:]) > 0.85 and model.hazards(8)[-1] > 0.99
    assert model.expected_tokens(8) > 4.0
    assert model.best_k(8) == 8


def test_positions_never_drafted_inherit_the_rate_of_the_one_before():
    from specx.policy.costmodel import CostModel

    model = CostModel()
    for _ in range(20):
        model.observe(2, 2, 0.0, 0.1)
    h = model.hazards(6)
    assert h[2] == pytest.approx(h[1], rel=0.1) and h[5] == pytest.approx(h[1], rel=0.1)


def test_a_probe_waits_for_a_round_in_which_the_drafter_proposes():
    """The n-gram drafter often has nothing to offer: a round without drafts is not a failed probe."""
    PROBE_GAP = KNOBS.probe_gap

    policy = make("auto", 4)
    for _ in range(40):
        _drive(policy, 1, 0.08, lambda n: 0.1 + 0.05 * (n - 1), 0.0)
        if policy.off:
            break
    assert policy.off
    for _ in range(PROBE_GAP + 5):   # the probe comes, but the drafter proposes nothing
        k = policy.next_k()
        policy.update(0, 0, 0.0, 0.1)
    assert k == 4 and policy.probing and policy.gap == PROBE_GAP


def test_on_a_moe_target_the_off_sentence_names_the_expert_cost():
    from specx.policy.costmodel import CostModel

    model = CostModel(verify_s={1: 0.10, 5: 0.30}, draft_step_s=0.08, moe=True)
    assert "union of their experts" in model.explain(0)
    assert "experts" not in CostModel(verify_s={1: 0.1, 5: 0.3}, draft_step_s=0.08).explain(0)


def test_copied_rounds_teach_the_verify_cost_but_not_the_model_drafters_acceptance():
    """A hybrid's free copies say nothing about how often its model's drafts are accepted."""
    from specx.policy.costmodel import CostModel

    model = CostModel()
    for _ in range(10):
        model.observe(4, 4, 0.0, 0.3, source="copy")
    assert model.verify_s[5] == pytest.approx(0.3) and model.draft_step_s is None
    assert model.acceptance == pytest.approx(0.5) and not model.track("model").reached
    assert model.track("copy").acceptance > 0.9


def test_auto_trims_each_copy_to_what_its_evidence_has_earned():
    """A long running copy keeps its full length; one that keeps failing is not drafted at all (16
    tokens would double the forward for nothing); the model's drafts are never cut."""
    from specx.engine.draft import Draft

    policy = make("auto", 16)
    verify = lambda n: 0.4 + 0.03 * (n - 1)   # noqa: E731  (a CPU: 17 tokens ≈ 2.2× one)
    policy.update(0, 0, 0.0, verify(1))
    for _ in range(6):
        policy.update(16, 16, 0.0, verify(17), "match8")
        policy.update(16, 0, 0.0, verify(17), "match3")
    tokens = list(range(16))
    assert policy.trim(Draft(tokens, None, "match8")).tokens == tokens
    assert policy.trim(Draft(tokens, None, "match3")).tokens == []
    assert policy.trim(Draft(tokens, None, "model")).tokens == tokens
    assert make("fixed", 16).trim(Draft(tokens, None, "match3")).tokens == tokens


def _cpu_policy():
    policy = make("auto", 16)
    for n, seconds in ((1, 0.41), (2, 0.55), (5, 0.71), (17, 0.89)):   # measured: float32, 2 cores
        policy.update(n - 1, 0, 0.0, seconds, "match1")
    policy.cost.tracks.clear()
    return policy


def test_the_first_copy_goes_as_far_as_its_match_and_later_kinds_borrow_what_copies_showed():
    """With no copy judged yet, a copy drafts twice as far as its match goes back; a kind of copy not
    drafted yet then borrows the pooled rate: in prose one failed copy speaks for the others, in an
    edit one success does. 1–2-token matches are guesses: on a CPU they are not drafted."""
    from specx.engine.draft import Draft

    tokens = list(range(16))
    prose = _cpu_policy()
    assert len(prose.trim(Draft(tokens, None, "match3")).tokens) == 6
    assert prose.trim(Draft(tokens, None, "match8")).tokens == tokens
    assert prose.trim(Draft(tokens, None, "match2")).tokens == []
    prose.update(6, 0, 0.0, 0.75, "match3")
    prose.update(4, 0, 0.0, 0.71, "resume")
    assert prose.trim(Draft(tokens, None, "match8")).tokens == []
    edit = _cpu_policy()
    edit.update(16, 16, 0.0, 0.89, "match8")
    edit.update(6, 6, 0.0, 0.75, "match3")
    assert len(edit.trim(Draft(tokens, None, "resume")).tokens) >= 8


def test_short_matches_are_drafted_where_verifying_is_nearly_free():
    """On a GPU a forward of 17 tokens costs about what one does: even a 15% guess pays there."""
    from specx.engine.draft import Draft

    gpu = make("auto", 16)
    for n in (1, 17):
        gpu.update(n - 1, 0, 0.0, 0.020 + 0.0001 * n)
    gpu.cost.tracks.clear()
    assert len(gpu.trim(Draft(list(range(8)), None, "match2")).tokens) >= 1


def test_drafting_must_promise_a_margin_over_plain_decoding():
    """What the estimate leaves out is paid anyway: a draft that promises 2% more is not worth it."""
    MARGIN = KNOBS.margin

    model = _pooled(0.0, 0.0, verify_s={1: 0.100, 2: 0.147}, draft_step_s=0.0)
    even = model.rate(1) / model.rate(0)
    assert 1.0 < even < 1 + MARGIN and model.best_k(1) == 0


def test_where_drafting_pays_the_model_drafts_up_to_k_and_stops_itself():
    """auto picks the model drafter's k from measured costs only to turn drafting off: where it pays
    the drafter goes up to k_max and its confidence and survival stops end the draft (position-wise
    rates held code drafts at 5 while every round of 5 was accepted: position 6 was never judged
    again after one rejection)."""
    policy = make("auto", 16)
    verify = lambda n: 0.4 + 0.03 * (n - 1)   # noqa: E731  (a CPU: 17 tokens ≈ 2.2× one)
    policy.update(0, 0, 0.0, verify(1))
    policy.update(6, 5, 6 * 0.06, verify(7))
    assert 1 <= policy.cost.best_k(16) < 8 and policy.cost.break_even() == pytest.approx(0.06 / 0.4)
    assert policy.stops(16).floors[0] > policy.cost.break_even()   # the verify share counts too
    assert policy.next_k() == 16


def test_after_a_copy_accepted_whole_the_next_copy_of_its_kind_goes_twice_as_far():
    """One rejection at a far position would hold copies of a kind short while every shorter one is
    accepted (the position is never judged again); a whole acceptance doubles the next, a rejection
    ends that."""
    from specx.engine.draft import Draft

    policy = make("auto", 16)
    verify = lambda n: 0.4 + 0.03 * (n - 1)   # noqa: E731
    policy.update(0, 0, 0.0, verify(1))
    policy.update(8, 2, 0.0, verify(9), "match3")
    tokens = list(range(16))
    held = len(policy.trim(Draft(tokens, None, "match3")).tokens)
    policy.update(held, held, 0.0, verify(held + 1), "match3")
    assert 1 <= held < 8 and len(policy.trim(Draft(tokens, None, "match3")).tokens) >= 2 * held
    policy.update(16, 3, 0.0, verify(17), "match3")
    best = policy.cost.best_k(16, source="match3")
    assert len(policy.trim(Draft(tokens, None, "match3")).tokens) == best


def test_the_model_drafter_stops_when_its_draft_would_likely_be_wasted(make_lm):
    """auto: the drafter stops once the product of its confidences falls below a drafted token's cost
    in plain tokens (CostModel.break_even); a random tiny model is never that sure of two tokens."""
    from specx.policy.costmodel import CostModel

    assert CostModel(verify_s={1: 0.4}, draft_step_s=0.08).break_even() == pytest.approx(0.2)
    assert CostModel(verify_s={2: 0.4}, draft_step_s=0.08).break_even() is None
    assert make("fixed", 4).stops(4).floors is None
    drafter = ModelDrafter(make_lm("llama", seed=22, layers=1), 96, 96)
    seq = [0, 5, 9, 12, 5, 9]
    drafter.prefill(seq)
    assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=(0.5,) * 6))).tokens) == 1
    drafter.prefill(seq)
    assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=(1e-30,) * 6))).tokens) == 6


def test_the_survival_floor_prices_a_further_token_at_its_draft_step_and_verify_share():
    """A further drafted token must earn its drafting step and what it adds to the verify forward, in
    plain tokens: with a flat verify cost that is the break-even of the step alone."""
    from specx.policy.costmodel import CostModel

    flat = CostModel(verify_s={1: 0.4, 2: 0.4, 3: 0.4}, draft_step_s=0.08)
    assert flat.survival_floor(1) == pytest.approx(flat.pace(1) * flat.break_even())
    assert flat.break_even() == pytest.approx(0.2)
    steep = CostModel(verify_s={n: 0.4 + 0.04 * (n - 1) for n in (1, 2, 3, 5)}, draft_step_s=0.08)
    assert steep.survival_floor(1) == pytest.approx(steep.pace(1) * (0.08 + 0.04) / 0.4)   # 2 → 3 tokens
    assert steep.survival_floor(3) == pytest.approx(steep.pace(3) * (0.08 + 0.04) / 0.4)   # 4 → 5
    floors = steep.survival_floors(9)
    assert floors[8] < floors[2]   # beyond the longest measured: growing as log n
    assert CostModel(verify_s={1: 0.4}, draft_step_s=0.08).survival_floor(1) == pytest.approx(0.2)   # pace 1


def test_a_further_token_must_earn_its_time_at_the_pace_drafting_makes():
    """A drafted token's time would otherwise start the next round: where drafting makes tokens at 1.5× plain
    decoding's rate, a token must be accepted with 1.5× the chance that would pay against plain decoding; where
    drafting does not beat plain decoding (no evidence, or a drafter mostly wrong) the floors are as before."""
    from specx.policy.costmodel import CostModel

    times = {n: 0.04 + 0.006 * (n - 1) for n in range(1, 10)}
    sure = CostModel(verify_s=dict(times), draft_step_s=0.011)
    for _ in range(20):
        sure.observe(4, 4, 4 * 0.011, times[5])
    pace = sure.pace(8)
    assert pace == pytest.approx(max(sure.rate(k) for k in range(1, 9)) * times[1]) and pace > 1.3
    base, prices = sure.break_even(), sure.row_prices(9)[1:]
    assert sure.survival_floors(8) == pytest.approx(tuple(pace * (base + p / times[1]) for p in prices))
    wrong = CostModel(verify_s=dict(times), draft_step_s=0.011)
    for _ in range(20):
        wrong.observe(4, 0, 4 * 0.011, times[5])
    assert wrong.pace(8) == 1.0
    assert CostModel(verify_s={2: 0.4}, draft_step_s=0.08).survival_floor(1) is None


def test_one_slow_measure_does_not_price_the_rows_around_it():
    """A row's price is fitted through the forwards measured near it, not the difference of two of them:
    one slow measure of 5 tokens (by 2.5 rows' worth, as a shared CPU gives) would price the row into it at
    3.5× its cost and the next below zero; the fit stays near the true 0.04 s and above zero."""
    from specx.policy.costmodel import CostModel

    times = {n: 0.4 + 0.04 * (n - 1) for n in range(1, 10)}
    times[5] += 0.1
    cost = CostModel(verify_s=times, verify_n={n: 4.0 for n in times} | {5: 1.0})
    prices = cost.row_prices(8)
    assert 0.02 < prices[3] < 0.06 and 0.02 < prices[4] < 0.06   # rows 4 → 5 and 5 → 6
    assert times[5] - times[4] == pytest.approx(0.14) and times[6] - times[5] == pytest.approx(-0.06)


def test_a_row_price_follows_a_kink_in_the_verify_cost():
    """Flat up to 8 tokens, then a forward of 9+ decoding its weights twice: the rows past the kink cost more
    than those well before it (the window is local), and the ones before it nothing."""
    from specx.policy.costmodel import CostModel

    times = {n: 0.4 if n <= 8 else 0.6 + 0.01 * n for n in range(1, 17)}
    prices = CostModel(verify_s=times).row_prices(15)
    assert prices[1] == pytest.approx(0.0) and prices[8] > 0.02 and prices[13] == pytest.approx(0.01)
    assert all(p >= 0 for p in prices)


def test_the_measures_behind_a_time_decay_with_its_age():
    """verify_n: each measure of a size adds one; a new measure after long unmeasured keeps little of the
    old count (as its time keeps little of the old time)."""
    from specx.policy.costmodel import CostModel

    cost = CostModel()
    for _ in range(3):
        cost.observe(1, 1, 0.01, 0.5)
    assert 2.0 < cost.verify_n[2] < 3.0
    for _ in range(20):
        cost.observe(0, 0, 0.0, 0.4)
    cost.observe(1, 1, 0.01, 0.5)
    assert 1.0 <= cost.verify_n[2] < 1.5


def test_a_drafter_holds_the_running_chance_of_its_draft_to_the_floor_for_its_length(make_lm):
    """The survival floor depends on the draft so far: after its m-th token the drafter compares the
    running chance that all m are accepted (the product of their chances, falling) with floors[m − 1]."""
    drafter = ModelDrafter(make_lm("llama", seed=22, layers=1), 96, 96)
    seq = [0, 5, 9, 12, 5, 9]
    drafter.prefill(seq)
    assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=(0.0, 0.0, 1.0, 1.0, 1.0, 1.0)))).tokens) == 3
    drafter.prefill(seq)
    whole = drafter.propose(seq, Ask(6, stops=Stops(floors=(0.0,) * 6))).confidences
    running = [math.prod(whole[:m]) for m in range(1, 7)]
    assert len(whole) == 6 and all(a >= b for a, b in zip(running, running[1:]))
    for m in (1, 3, 5):
        at = tuple(running[m - 1] * (1 + 1e-9) if i == m - 1 else 0.0 for i in range(6))
        below = tuple(running[m - 1] * (1 - 1e-9) if i == m - 1 else 0.0 for i in range(6))
        drafter.prefill(seq)
        assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=at))).tokens) == m
        drafter.prefill(seq)
        assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=below))).tokens) == 6


def test_the_survival_stop_reads_confidences_through_the_measured_calibration(make_lm):
    """A drafter whose doubtful tokens are measured to be accepted drafts on past its raw confidences
    (the same tiny drafter as above stops after one token uncalibrated)."""
    policy = make("auto", 6)
    policy.cost.calibration.add((0.01, 0.1, 0.3, 0.5) * 50, 200)
    calibration = policy.stops(6).calibration
    assert calibration.acceptance(0.01) > 0.95 and make("fixed", 6).stops(6).calibration is None
    assert calibration.acceptance(0.01) == policy.cost.calibration.acceptance(0.01)   # the same numbers
    drafter = ModelDrafter(make_lm("llama", seed=22, layers=1), 96, 96)
    seq = [0, 5, 9, 12, 5, 9]
    drafter.prefill(seq)
    assert len(drafter.propose(seq, Ask(6, stops=Stops(floors=(0.5,) * 6, calibration=calibration))).tokens) == 6


def test_copies_may_go_the_full_length_while_the_model_drafter_is_off(make_lm):
    """A hybrid's copies are cut by `trim`, not by the model's k: with the model drafter off they are
    still offered k_max (clamped to the budget), the model none."""
    from specx.engine.draft import Draft, NoDrafter

    class Recorder(NoDrafter):
        asks: list = []

        def propose(self, seq, ask):
            self.asks.append((ask.k, ask.model_k))
            return Draft([], None)

    policy = make("auto", 16)
    policy.update(4, 0, 0.4, 0.5)
    policy.update(0, 0, 0.0, 0.4)
    policy.off, policy.gap = True, 1000
    recorder = Recorder()
    list(Generation(make_lm("llama", seed=21), recorder, [0, 5, 9], k=16, max_tokens=10,
                    sampling=Sampling(), policy=policy))
    # the first round is plain (no ask); then 10 - 1 - 1 tokens remain to draft
    assert recorder.asks[0] == (8, 0) and all(model_k == 0 for _, model_k in recorder.asks)


def test_the_off_sentence_names_the_first_drafted_tokens_rate():
    """Drafts that fail at once and one long accepted one: a high per-token acceptance, yet drafting
    does not pay; the sentence says why (the first token's rate), not only the misleading average."""
    from specx.policy.costmodel import CostModel

    cost = CostModel(verify_s={1: 0.4, 2: 0.6, 10: 0.9, 14: 1.0}, draft_step_s=0.14)
    for drafted, accepted in ((9, 0), (4, 0), (13, 13), (5, 0)):
        cost.observe(drafted, accepted, 0.14 * drafted, 0.8)
    sentence = cost.explain(0)
    first = round(100 * cost.hazards(1)[0])
    assert f"{first}% for a round's first" in sentence and first < round(100 * cost.acceptance)

def test_the_drafters_prompt_pass_may_cost_what_drafting_is_expected_to_save():
    """read_budget: the share of READ_ANSWER plain tokens at most that drafting saves beyond MARGIN at
    the measured costs and the prior acceptance (float32-like costs: ~7%); nothing where drafting does not pay
    (fp16-like: a drafting step 40% of a plain one), None before the costs are measured."""
    from specx.policy.costmodel import CostModel

    READ_ANSWER = KNOBS.read_answer

    assert CostModel().read_budget(64) is None
    assert CostModel(verify_s={1: 0.19}, draft_step_s=0.031).read_budget(64) is None
    cost = CostModel(verify_s={1: 0.19, 2: 0.22, 3: 0.25}, draft_step_s=0.031)   # float32-like
    saving = 1 - 1.05 / 0.19 / (1.5 / (0.22 + 0.031))   # k=1 at the prior (half accepted) is best here,
    assert cost.read_budget(64) == pytest.approx(saving * 64 * 0.19, rel=0.05) and 0.05 < saving < 0.1   # MARGIN
    assert cost.read_budget(10 * READ_ANSWER) == pytest.approx(saving * READ_ANSWER * 0.19, rel=0.05)
    dear = CostModel(verify_s={1: 0.09, 2: 0.105}, draft_step_s=0.036)
    assert dear.read_budget(64) == 0.0


def test_a_drafters_catching_up_after_plain_rounds_stays_out_of_the_drafting_step():
    """A probe after a long stretch of plain rounds starts with the drafter reading its window of them
    (read_s): neither the step nor a round's catching-up cost takes it, so probe after probe the carried
    step stays a step's (counted in, it rose from 15 ms to 40 in one chat answer, and drafting looked dear
    everywhere after). After copies a model round pays its catching up again each time: a round's cost."""
    from specx.policy.costmodel import CostModel

    policy = make("auto", 16, cost=CostModel(verify_s={1: 0.035, 2: 0.045, 5: 0.06}, draft_step_s=0.015))
    for _ in range(5):                                  # probes after stretches of plain decoding
        for _ in range(40):
            policy.update(0, 0, 0.0, 0.035)
        policy.update(2, 0, 2 * 0.015 + 0.2, 0.045, made=2, read_s=0.2)
    assert policy.cost.draft_step_s == pytest.approx(0.015)
    assert policy.cost.catchup_s is None
    cost = CostModel(verify_s={1: 0.035, 2: 0.045, 5: 0.06}, draft_step_s=0.015)
    cost.observe(4, 4, 0.0, 0.06, source="match8")      # a copy, then the model drafts and first reads it
    cost.observe(3, 1, 3 * 0.015 + 0.01, 0.05, made=3, read_s=0.01)
    assert cost.draft_step_s == pytest.approx(0.015) and cost.catchup_s == pytest.approx(0.01)
    round_s = cost.verify_time(5) + 4 * cost.draft_step_s + 0.01
    assert cost.rate(4) == pytest.approx(cost.expected_tokens(4) / round_s)
    assert cost.rate(0) == pytest.approx(1 / 0.035)


def test_a_forward_size_not_timed_for_long_gives_way_to_fresher_sizes():
    """Over a pair's answers a size not timed for stale_rounds rounds is dropped and interpolated from fresher
    sizes (one measured in a slow phase had priced drafts of its length out for a whole session); plain
    decoding's time and the freshest other size are kept, so verify costs stay known."""
    from specx.policy.costmodel import CostModel

    cost = CostModel()
    cost.observe(7, 7, 0.0, 0.30)                       # an 8-token forward in a slow phase: 0.30 s
    cost.observe(1, 1, 0.0, 0.05)
    for answer in range(3):
        cost = CostModel.following(cost)
        for _ in range(KNOBS.stale_rounds // 2):
            cost.observe(0, 0, 0.0, 0.04)
            cost.observe(3, 3, 0.0, 0.07)
    assert sorted(cost.verify_s) == [1, 4] and cost.lifetime == 3 * KNOBS.stale_rounds + 2
    assert cost.verify_time(8) == pytest.approx(0.07 + 0.03 / 2)   # along ln n from 1 and 4, as they are now
    lone = CostModel(verify_s={1: 0.04, 2: 0.05, 5: 0.08})
    for _ in range(KNOBS.stale_rounds + 1):
        lone.observe(0, 0, 0.0, 0.04)
    assert sorted(lone.verify_s) == [1, 5]              # loaded from disk: as old as this process; the longest kept
