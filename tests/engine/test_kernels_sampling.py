"""Invariants of specx.engine.sampling: greedy, warp (temperature, top-k, top-p), logit checks."""
from __future__ import annotations

import math

import pytest
import torch

from conftest import generator as _gen
from specx.engine.sampling import BadLogits, check_logits, greedy, sample, warp

pytestmark = pytest.mark.usefixtures("one_thread_module")


# ---------------------------------------------------------------- greedy


def test_greedy_is_argmax_with_first_index_on_ties():
    """greedy(logits) is the index of the largest logit along the last axis, the lowest such index on ties."""
    g = _gen(0)
    # Small integer logits make ties common; a leading batch shape checks the (…, V) -> (…,) contract.
    logits = torch.randint(0, 3, (4, 5, 7), generator=g).float()
    got = greedy(logits)
    assert got.shape == (4, 5)
    ties_seen = 0
    for idx in range(4 * 5):
        row = logits.reshape(-1, 7)[idx].tolist()
        best = max(row)
        expected = row.index(best)  # Python's first occurrence: independent of torch.argmax
        ties_seen += row.count(best) > 1
        assert int(got.reshape(-1)[idx]) == expected
    assert ties_seen > 0, "fixture should contain ties"
    # Explicit tie: the maximum appears at 2, 4 and 6 -> 2; -inf elsewhere does not matter.
    row = torch.tensor([float("-inf"), 0.0, 3.0, 1.0, 3.0, float("-inf"), 3.0])
    assert int(greedy(row)) == 2


# ---------------------------------------------------------------- warp: temperature


def test_warp_temperature_is_softmax_of_scaled_logits():
    """warp(l, T) == softmax(l / T): float32, rows sum to 1, and lower T concentrates mass on the argmax."""
    g = _gen(1)
    logits = torch.randn(16, 11, generator=g, dtype=torch.float64) * 3
    for t in (0.25, 0.7, 1.0, 1.5, 4.0):
        got = warp(logits, t)
        assert got.dtype == torch.float32
        ref = torch.softmax(logits / t, dim=-1)
        torch.testing.assert_close(got.double(), ref, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got.sum(-1).double(), torch.ones(16, dtype=torch.float64), atol=1e-5, rtol=0)
    # Scale invariance: warp(c*l, c*T) == warp(l, T).
    torch.testing.assert_close(warp(3 * logits, 3.0), warp(logits, 1.0), atol=1e-6, rtol=1e-5)
    # Monotone sharpening: the argmax's probability grows as T falls, and T -> 0 approaches one-hot.
    top = logits.argmax(-1, keepdim=True)
    p_hot = warp(logits, 2.0).gather(-1, top)
    p_mid = warp(logits, 1.0).gather(-1, top)
    p_cold = warp(logits, 0.01).gather(-1, top)
    assert (p_mid >= p_hot).all() and (p_cold >= p_mid).all()
    assert (p_cold > 0.999).all()


@pytest.mark.parametrize("t", [0.0, -1.0])
def test_warp_rejects_non_positive_temperature(t):
    """warp requires temperature > 0 (temperature 0 means greedy, which is argmax, not warp)."""
    with pytest.raises(ValueError):
        warp(torch.zeros(1, 4), t)


# ---------------------------------------------------------------- warp: top-k


def test_warp_top_k_zeroes_everything_outside_the_k_largest():
    """After warp(top_k=k) exactly the k largest logits keep mass, renormalised as softmax over them."""
    g = _gen(2)
    for trial in range(60):
        v = 2 + trial % 15
        logits = torch.randn(3, v, generator=g, dtype=torch.float64) * 2  # continuous: no ties
        t = (0.5, 1.0, 2.0)[trial % 3]
        for k in range(1, v):
            got = warp(logits, t, top_k=k).double()
            keep = torch.zeros_like(got, dtype=torch.bool).scatter(-1, logits.topk(k, -1).indices, True)
            assert (got[~keep] == 0).all(), "mass outside the top-k"
            assert (got[keep] > 0).all()
            ref = torch.softmax((logits / t).masked_fill(~keep, float("-inf")), -1)
            torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(got.sum(-1), torch.ones(3, dtype=torch.float64), atol=1e-5, rtol=0)
        # top_k >= V, 0 or None leaves the distribution alone.
        full = torch.softmax(logits / t, -1)
        for k in (None, 0, v, v + 3):
            torch.testing.assert_close(warp(logits, t, top_k=k).double(), full, atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------- warp: top-p


def _top_p_reference(probs: list[float], top_p: float) -> set[int]:
    """Smallest set of most likely tokens whose mass reaches top_p; at least one token."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = set(), 0.0
    for i in order:
        if probs[i] == 0.0:
            break
        kept.add(i)
        mass += probs[i]
        if mass >= top_p:
            break
    return kept


def test_warp_top_p_keeps_the_smallest_set_reaching_the_mass():
    """warp(top_p=p) keeps exactly the smallest most-likely set with mass >= p (after temperature and top-k),
    renormalised; rows sum to 1."""
    g = _gen(3)
    checked = 0
    for trial in range(300):
        v = 2 + trial % 14
        logits = torch.randn(v, generator=g, dtype=torch.float64) * 2
        t = (0.6, 1.0, 1.7)[trial % 3]
        top_k = None if trial % 4 else int(torch.randint(1, v + 1, (1,), generator=g))
        top_p = float(torch.rand(1, generator=g)) * 0.98 + 0.01
        # The reference distribution top-p sees: temperature, then top-k renormalised.
        scores = logits / t
        if top_k is not None and top_k < v:
            kth = scores.topk(top_k).values[-1]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        base = torch.softmax(scores, -1)
        cum = base.sort(descending=True).values.cumsum(-1)
        if (cum - top_p).abs().min() < 1e-4:
            continue  # float32 inside warp cannot decide a boundary this close; not the property under test
        checked += 1
        kept = _top_p_reference(base.tolist(), top_p)
        got = warp(logits.unsqueeze(0), t, top_k=top_k, top_p=top_p)[0].double()
        assert {i for i in range(v) if got[i] > 0} == kept, (trial, top_k, top_p)
        mask = torch.tensor([i in kept for i in range(v)])
        ref = base.masked_fill(~mask, 0.0)
        torch.testing.assert_close(got, ref / ref.sum(), atol=1e-6, rtol=1e-5)
        assert abs(float(got.sum()) - 1.0) < 1e-5
    assert checked >= 250


@pytest.mark.parametrize("top_p", [0.0, 1e-9, 1e-3])
def test_warp_top_p_always_keeps_at_least_one_token(top_p):
    """However small top_p is (including 0), warp keeps the most likely token: a one-hot on the argmax."""
    g = _gen(4)
    logits = torch.randn(8, 10, generator=g)
    got = warp(logits, 1.0, top_p=top_p)
    expected = torch.nn.functional.one_hot(logits.argmax(-1), 10).float()
    torch.testing.assert_close(got, expected)


def test_warp_top_p_one_or_none_is_a_no_op():
    """top_p = 1.0 or None leaves the tempered distribution untouched (no tail token is dropped)."""
    logits = torch.tensor([[5.0, 0.0, -5.0, -12.0, -30.0]])
    full = torch.softmax(logits, -1)
    torch.testing.assert_close(warp(logits, 1.0, top_p=1.0), full)
    torch.testing.assert_close(warp(logits, 1.0, top_p=None), full)
    assert (warp(logits, 1.0, top_p=1.0) > 0).all()


# ---------------------------------------------------------------- bad logits


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_and_pos_inf_logits_are_rejected(bad):
    """A NaN or +inf anywhere in the logits raises BadLogits (a ValueError) from check_logits and warp."""
    logits = torch.randn(3, 6, generator=_gen(5))
    logits[2, 4] = bad
    with pytest.raises(BadLogits):
        check_logits(logits)
    for kwargs in ({}, {"top_k": 2}, {"top_p": 0.5}):
        with pytest.raises(BadLogits):
            warp(logits, 1.0, **kwargs)
    assert issubclass(BadLogits, ValueError)


def test_neg_inf_logits_are_a_mask_not_an_error():
    """-inf logits are allowed while some token in the row is finite: they get probability 0."""
    logits = torch.tensor([[float("-inf"), 1.0, float("-inf"), 0.5, 2.0],
                           [float("-inf"), float("-inf"), float("-inf"), float("-inf"), -3.0]])
    assert check_logits(logits) is logits
    for kwargs in ({}, {"top_k": 2}, {"top_k": 4}, {"top_p": 0.9}, {"top_k": 3, "top_p": 0.5}):
        got = warp(logits, 0.8, **kwargs)
        assert torch.isfinite(got).all()
        assert (got[torch.isneginf(logits)] == 0).all()
        torch.testing.assert_close(got.sum(-1), torch.ones(2), atol=1e-6, rtol=0)
    # Only one finite token left: it takes all the mass.
    assert float(warp(logits, 1.0)[1, 4]) == 1.0


def test_all_neg_inf_row_is_rejected():
    """A row whose logits are all -inf has no distribution: warp raises BadLogits, even if other rows are fine."""
    logits = torch.randn(3, 5, generator=_gen(6))
    logits[1] = float("-inf")
    with pytest.raises(BadLogits):
        warp(logits, 1.0)
    with pytest.raises(BadLogits):
        warp(logits[1:2], 1.0, top_k=2, top_p=0.5)


# ---------------------------------------------------------------- sample


def test_sample_is_reproducible_and_respects_support():
    """sample() with the same seed draws the same tokens, and never draws a zero-probability token."""
    probs = torch.tensor([[0.0, 0.5, 0.0, 0.5], [0.1, 0.0, 0.9, 0.0]]).repeat(50, 1)
    a = sample(probs, _gen(7))
    b = sample(probs, _gen(7))
    assert torch.equal(a, b)
    assert (probs.gather(-1, a.unsqueeze(-1)) > 0).all()
    assert a.shape == (100,)
    assert not math.isclose(float(a.float().std()), 0.0)
