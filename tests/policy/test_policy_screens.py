"""fixed, heuristic and confidence: how k moves, where the confidence policy stops, and that output never changes."""
from __future__ import annotations

import pytest

from specx.drafters.model import ModelDrafter
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling
from specx.policy.policy import make


def test_heuristic_moves_k_as_transformers_does():
    """+2 after a fully accepted round, −1 otherwise, never below 1; rounds with no draft change nothing."""
    p = make("heuristic", 4)
    steps = []
    for drafted, accepted in ((4, 4), (6, 6), (8, 3), (7, 0), (6, 6), (0, 0), (8, 1)):
        p.update(drafted, accepted)
        steps.append(p.next_k())
    assert steps == [6, 8, 7, 6, 8, 8, 7]
    low = make("heuristic", 1)
    low.update(1, 0)
    assert low.next_k() == 1


def test_fixed_and_confidence_keep_k():
    """fixed and confidence always offer k; only confidence sets a drafter threshold."""
    for name in ("fixed", "confidence"):
        p = make(name, 5, 0.3)
        p.update(5, 0)
        assert p.next_k() == 5
    assert make("fixed", 5).stops(5).min_confidence is None
    assert make("confidence", 5, 0.3).stops(5).min_confidence == 0.3
    with pytest.raises(ValueError):
        make("bogus", 4)


def run(make_lm, policy, k=6, n=30):
    target, draft = make_lm("llama", seed=21), make_lm("llama", seed=22, layers=1)
    gen = Generation(target, ModelDrafter(draft, 96, 96), [0, 5, 9, 12, 5, 9], k=k, max_tokens=n,
                     sampling=Sampling(), policy=policy)
    events = list(gen)
    return [t for e in events if isinstance(e, Round) for t in e.token_ids], events


def test_confidence_policy_stops_drafting_at_the_threshold(make_lm):
    """With a threshold above every probability, a round drafts one token at most; with ~0, up to k."""
    _, events = run(make_lm, make("confidence", 6, 0.999999))
    drafted = {e.drafted for e in events if isinstance(e, Round) and e.token_ids}
    assert 1 in drafted and drafted <= {0, 1}  # 0 only where the token budget leaves no room to draft
    _, events = run(make_lm, make("confidence", 6, 1e-12))
    drafted = [e.drafted for e in events if isinstance(e, Round) and e.token_ids]
    assert max(drafted) == 6


def test_policies_never_change_the_output(make_lm):
    """Every policy, and k = 0, gives the same greedy tokens."""
    outputs = [run(make_lm, make(name, 4, 0.5))[0] for name in ("fixed", "heuristic", "confidence", "auto")]
    plain, _ = run(make_lm, make("fixed", 0), k=0)
    assert outputs[0] == outputs[1] == outputs[2] == outputs[3] == plain
