"""auto sends the target only the prefix of a model's draft that is worth verifying."""
from __future__ import annotations

import pytest
import torch

from specx.policy.acceptance import Calibration
from specx.policy.costmodel import MODEL, CostModel
from specx.engine.draft import Draft
from specx.drafters.model import ModelDrafter
from specx.engine.loop import Generation
from specx.policy.policy import make
from specx.engine.types import Round, Sampling

CPU = {1: 0.35, 2: 0.70, 5: 0.80, 17: 1.00}   # float32 verify seconds by tokens per forward (dev CPU shape)


def test_a_lone_doubtful_draft_costs_more_to_check_than_it_saves():
    """On a CPU a forward of 2 tokens costs ~2× one: a single token at confidence 0.5 is dropped,
    a confident run is kept whole; with flat verify costs (a GPU) the lone token is kept."""
    cpu = CostModel(verify_s=dict(CPU))
    assert cpu.worth_verifying((0.5,)) == 0
    assert cpu.worth_verifying((0.99,) * 8) == 8
    gpu = CostModel(verify_s={1: 0.020, 17: 0.021})
    assert gpu.worth_verifying((0.5,)) == 1


def test_the_kept_prefix_stops_where_the_drafters_doubt_begins():
    cpu = CostModel(verify_s={1: 0.35, 2: 0.70, 3: 0.72, 4: 0.74})
    assert cpu.worth_verifying((0.99, 0.99, 0.05)) == 2


def test_nothing_is_cut_before_plain_decoding_is_measured():
    assert CostModel(verify_s={2: 0.7, 5: 0.8}).worth_verifying((0.1,)) is None
    assert CostModel(verify_s=dict(CPU)).worth_verifying(()) is None


def test_calibration_learns_acceptance_per_confidence_bin():
    """With no evidence a confidence is its own estimate; judged tokens move only their bin."""
    calibration = Calibration()
    assert calibration.acceptance(0.5) == pytest.approx(0.5)
    calibration.add((0.5,) * 10, 10)
    assert calibration.acceptance(0.5) > 0.9
    assert calibration.acceptance(0.95) == pytest.approx(0.95)
    calibration.add((0.95,) * 4, 0)
    assert calibration.acceptance(0.95) < 0.5


def test_the_policy_cuts_tokens_probabilities_and_confidences_alike():
    policy = make("auto", 16)
    policy.cost.verify_s.update({1: 0.35, 2: 0.70, 3: 0.72, 4: 0.74})
    draft = Draft([7, 8, 9], torch.rand(3, 96), confidences=(0.99, 0.99, 0.05), made=3)
    cut = policy.trim(draft)
    assert cut.tokens == [7, 8] and cut.probs.shape == (2, 96) and cut.confidences == (0.99, 0.99)
    assert cut.made == 3 and cut.source == MODEL
    nothing = policy.trim(Draft([7], torch.rand(1, 96), confidences=(0.3,), made=1))
    assert nothing.tokens == [] and nothing.probs is None
    assert make("confidence", 4).trim(draft) is draft


def test_a_dropped_draft_counts_against_the_drafter_and_its_time_per_token_made():
    policy = make("auto", 16)
    policy.update(0, 0, 0.3, 0.35, MODEL, made=3, confidences=(0.3, 0.2, 0.1))
    track = policy.cost.track(MODEL)
    assert track.tries == 1 and track.rejected == 1 and track.accepted == 0
    assert policy.judged == 3 and policy.cost.draft_step_s == pytest.approx(0.1)
    assert policy.cost.verify_s[1] == pytest.approx(0.35)


def test_dropped_drafts_keep_the_output_and_turn_drafting_off(make_lm):
    """A random tiny drafter is never sure: every draft is dropped unverified, the output is the
    target's own, and auto soon stops drafting."""
    target, draft = make_lm("llama", seed=21), make_lm("llama", seed=22, layers=1)
    prompt = [0, 5, 9, 12, 5, 9]
    policy = make("auto", 8)
    policy.update(0, 0, 0.0, CPU[1])
    policy.update(4, 0, 0.4, CPU[5], MODEL, made=4)
    policy.cost.verify_s.update(CPU)
    gen = Generation(target, ModelDrafter(draft, 96, 96), prompt, k=8, max_tokens=30, sampling=Sampling(),
                     policy=policy)
    rounds = [e for e in gen if isinstance(e, Round) and e.token_ids]
    plain = Generation(target, ModelDrafter(draft, 96, 96), prompt, k=0, max_tokens=30, sampling=Sampling())
    assert [t for r in rounds for t in r.token_ids] == [t for e in plain if isinstance(e, Round) for t in e.token_ids]
    assert any(r.draft_s > 0 and r.drafted == 0 for r in rounds)
    assert all(r.drafted == 0 for r in rounds) and policy.off


# Verify seconds by forward size on the dev CPU's default pair (benchmarks/results/2026-11-29-longest): 8 tokens
# a forward is the best rate; 9 tokens take the kernel's second pass.
PAIR = {1: 0.0343, 2: 0.0402, 3: 0.0463, 4: 0.0523, 5: 0.0596, 7: 0.0782, 8: 0.0817, 9: 0.1034, 17: 0.1926}


def test_no_draft_longer_than_the_longest_worth_verifying_is_kept():
    """worth_verifying keeps at most longest_worth's tokens, whatever the confidences and verify costs: the
    chances that a draft survives to each length never rise along it."""
    gen = torch.Generator().manual_seed(5)
    for _ in range(300):
        sizes = sorted({1, *(torch.randint(2, 18, (int(torch.randint(1, 6, (1,), generator=gen)),),
                                           generator=gen).tolist())})
        times = (torch.rand(len(sizes), generator=gen) * 2 + 0.1).cumsum(0).tolist()
        model = CostModel(verify_s=dict(zip(sizes, times)))
        n = int(torch.randint(1, 17, (1,), generator=gen))
        confidences = tuple(torch.rand(n, generator=gen).tolist())
        assert model.worth_verifying(confidences) <= model.longest_worth(n)


def test_auto_drafts_no_further_than_it_would_verify():
    """On the pair's costs a model draft stops at 7 tokens (a forward of 8), where it went to k = 16 and had
    all but 6-7 cut; until longer forwards are measured it may go to k."""
    model = CostModel(verify_s=dict(PAIR))
    assert model.longest_worth(16) == 7 and model.longest_worth(4) == 4
    assert CostModel(verify_s={1: 0.0343}).longest_worth(16) == 16
    assert CostModel(verify_s={1: 0.003, 2: 0.7, 17: 12.0}).longest_worth(16) == 1   # drafting at all: best_k
    policy = make("auto", 16)
    policy.cost.verify_s.update(PAIR)
    for _ in range(10):   # confident drafts accepted whole, at a cheap drafting step
        policy.update(7, 7, 7 * 0.008, PAIR[8], MODEL, made=7, confidences=(0.99,) * 7)
    assert policy.next_k() == 7
