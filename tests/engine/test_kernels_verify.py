"""Invariants of specx.engine.verify: speculative verification preserves the target law exactly."""
from __future__ import annotations

import pytest
import torch

from conftest import generator as _gen
from specx.engine.sampling import sample
from specx.engine.verify import accept_probability, residual, verify_greedy, verify_sampled

F64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_thread_module")


def _rand_dist(v: int, g: torch.Generator, zero_frac: float = 0.0) -> torch.Tensor:
    """A random float64 distribution over v tokens, some entries exactly 0 (never all)."""
    w = torch.rand(v, generator=g, dtype=F64) ** 2
    if zero_frac > 0:
        zeros = torch.rand(v, generator=g) < zero_frac
        zeros[int(torch.randint(0, v, (1,), generator=g))] = False
        w = w.masked_fill(zeros, 0.0)
    w[int(w.argmax())] += 1e-3  # never an all-zero row
    return w / w.sum()


# ---------------------------------------------------------------- 1. exact output law of one step


def _one_step_law(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Exact law of the token emitted by one k=1 verify step when the draft x ~ q:
    P(y) = sum_x q(x) [a(x) 1{y=x} + (1 - a(x)) residual(x)(y)]."""
    out = torch.zeros_like(p)
    for x in range(p.shape[0]):
        if q[x] == 0:
            continue  # never drafted
        a = accept_probability(p, q, x)
        out[x] += q[x] * a
        out += q[x] * (1 - a) * residual(p, q, x)
    return out


def _one_hot_step_law(p: torch.Tensor, x: int) -> torch.Tensor:
    """Exact law of one k=1 step with a deterministic draft x (draft_probs=None)."""
    a = accept_probability(p, None, x)
    out = (1 - a) * residual(p, None, x)
    out[x] += a
    return out


def test_one_step_output_law_equals_target_exactly():
    """For any p, q (q may have zeros where p has mass, p zeros where q has mass, q one-hot or None),
    the exact output law of one verify step built from accept_probability and residual equals p (1e-6)."""
    g = _gen(100)
    cases = q_gap = p_gap = one_hot = 0
    for trial in range(520):
        v = 2 + trial % 11  # V in 2..12
        p = _rand_dist(v, g, zero_frac=0.3 if trial % 3 == 0 else 0.0)
        kind = trial % 10
        if kind < 3:  # q misses some of p's support
            q = _rand_dist(v, g)
            support = (p > 0).nonzero().squeeze(-1)
            hole = support[torch.randperm(len(support), generator=g)[: max(1, len(support) // 2)]]
            q[hole] = 0.0
            if q.sum() == 0:
                q[int((p == 0).nonzero()[0]) if (p == 0).any() else int(hole[0])] = 1.0
            q = q / q.sum()
        elif kind == 3:  # explicit one-hot q
            q = torch.zeros(v, dtype=F64)
            q[int(torch.randint(0, v, (1,), generator=g))] = 1.0
            one_hot += 1
        elif kind == 4:  # q == p: the trivial case
            q = p.clone()
        else:
            q = _rand_dist(v, g, zero_frac=0.25)
        q_gap += bool(((q == 0) & (p > 0)).any())
        p_gap += bool(((p == 0) & (q > 0)).any())
        cases += 1
        law = _one_step_law(p, q)
        assert (law - p).abs().max() <= 1e-6, (trial, p, q, law)
        # draft_probs=None: the drafted token is deterministic; every choice of it preserves p.
        for x in range(v):
            law_x = _one_hot_step_law(p, x)
            assert (law_x - p).abs().max() <= 1e-6, (trial, x, p, law_x)
            if trial % 4:
                continue
            # ... and None means exactly "one-hot q on the drafted token".
            e_x = torch.zeros(v, dtype=F64)
            e_x[x] = 1.0
            assert torch.allclose(accept_probability(p, None, x), accept_probability(p, e_x, x), atol=1e-12)
            if accept_probability(p, None, x) < 1:
                assert torch.allclose(residual(p, None, x), residual(p, e_x, x), atol=1e-12)
    assert cases >= 500
    assert q_gap >= 0.2 * cases, f"only {q_gap}/{cases} cases with q = 0 where p > 0"
    assert p_gap > 0 and one_hot > 0


def test_accept_probability_and_residual_are_well_formed():
    """accept_probability(x) = min(1, p(x)/q(x)) lies in [0, 1]; after a possible rejection (p(x) < q(x))
    residual is a distribution proportional to max(p - q, 0), so it never puts mass where p <= q."""
    g = _gen(101)
    for trial in range(300):
        v = 2 + trial % 11
        p = _rand_dist(v, g, zero_frac=0.3)
        q = _rand_dist(v, g, zero_frac=0.3)
        for x in range(v):
            if q[x] == 0:
                continue
            a = float(accept_probability(p, q, x))
            assert 0.0 <= a <= 1.0
            assert a == pytest.approx(min(1.0, float(p[x] / q[x])), abs=1e-12)
            if a < 1.0:
                r = residual(p, q, x)
                assert (r >= 0).all() and abs(float(r.sum()) - 1.0) < 1e-12
                assert (r[p <= q] == 0).all()
                expected = (p - q).clamp(min=0)
                assert torch.allclose(r, expected / expected.sum(), atol=1e-12)


# ---------------------------------------------------------------- 2. chi-square of a 2-token chain

V = 6
K = 3
N_CHAIN = 10_000   # runs of the real sampler
N_BROKEN = 4_000   # the negative control is far off the law; fewer runs keep the test fast
CHAIN_SEED = 2024


def _chain_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """Target T[prev] and drafter D[prev]: next-token tables over V=6, with zeros on both sides
    (T[0,5]=T[3,1]=0; D never drafts 2, D[4,0]=0; D has mass where T has none)."""
    g = _gen(1234)
    t = torch.softmax(torch.randn(V, V, generator=g, dtype=F64) * 0.8, -1)
    d = 0.5 * torch.softmax(torch.randn(V, V, generator=g, dtype=F64) * 1.5, -1)
    t[0, 5] = 0.0
    t[3, 1] = 0.0
    t = t / t.sum(-1, keepdim=True)
    d = d + 0.5 * t
    d[:, 2] = 0.0
    d[4, 0] = 0.0
    d = d / d.sum(-1, keepdim=True)
    return t, d


def _broken_verify(target_probs, draft_tokens, draft_probs, generator):
    """verify_sampled with the classic bug: after a rejection, resample from p instead of the residual."""
    k = draft_tokens.shape[0]
    coins = torch.rand(k, generator=generator, dtype=F64)
    for i in range(k):
        token = int(draft_tokens[i])
        q_i = None if draft_probs is None else draft_probs[i]
        if coins[i] < accept_probability(target_probs[i], q_i, token):
            continue
        return i, int(sample(target_probs[i].unsqueeze(0), generator)[0])
    return k, int(sample(target_probs[k].unsqueeze(0), generator)[0])


def _first_two_tokens_histogram(verify, t, d, n, seed, start=0) -> torch.Tensor:
    """Run n independent generations from `start` until 2 tokens are committed; return the counts of
    (token1, token2) as a flat V*V histogram. Half the runs draft k=K tokens, the other half k=1 (so the
    bonus token after a fully accepted draft is among the two); a second round, if needed, drafts K."""
    g = _gen(seed)

    def one_round(prev: torch.Tensor, k: int):
        drafts, cur = [], prev
        for _ in range(k):  # x_{j+1} ~ D[x_j], vectorised over the runs
            cur = torch.multinomial(d[cur], 1, generator=g).squeeze(-1)
            drafts.append(cur)
        x = torch.stack(drafts, -1)                       # (runs, k)
        ctx = torch.cat([prev[:, None], x], -1)           # (runs, k+1): the prefix token of each position
        target_rows, draft_rows = t[ctx], d[ctx[:, :k]]   # (runs, k+1, V), (runs, k, V)
        results = [verify(tp, xs, dp, g) for tp, xs, dp in
                   zip(target_rows.unbind(0), x.unbind(0), draft_rows.unbind(0))]
        for accepted, _ in results:
            assert 0 <= accepted <= k
        return [x[i, :a].tolist() + [nxt] for i, (a, nxt) in enumerate(results)]

    half = n // 2
    committed = (one_round(torch.full((half,), start), K)
                 + one_round(torch.full((n - half,), start), 1))
    short = [i for i, c in enumerate(committed) if len(c) < 2]
    if short:
        more = one_round(torch.tensor([committed[i][0] for i in short]), K)
        for i, c in zip(short, more):
            committed[i] = committed[i] + c
    first = torch.tensor([c[0] for c in committed])
    second = torch.tensor([c[1] for c in committed])
    return torch.bincount(first * V + second, minlength=V * V).to(F64)


def _chi2_sf(stat: float, df: int) -> float:
    """Survival function of the chi-square distribution: Q(df/2, stat/2)."""
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=F64), torch.tensor(stat / 2, dtype=F64)))


def _chi2_pvalue(observed: torch.Tensor, law: torch.Tensor) -> float:
    """Pearson goodness-of-fit p-value over the cells where the law has mass; mass on a
    zero-probability cell is an outright failure (p = 0)."""
    if observed[law == 0].sum() > 0:
        return 0.0
    live = law > 0
    expected = observed.sum() * law[live]
    stat = float(((observed[live] - expected) ** 2 / expected).sum())
    return _chi2_sf(stat, int(live.sum()) - 1)


def test_chi2_helper_matches_closed_forms():
    """The chi-square survival function helper is right: df=2 gives exp(-x/2); df=1 gives erfc(sqrt(x/2))."""
    for x in (0.1, 1.0, 5.0, 30.0):
        assert _chi2_sf(x, 2) == pytest.approx(float(torch.exp(torch.tensor(-x / 2, dtype=F64))), rel=1e-9)
        assert _chi2_sf(x, 1) == pytest.approx(float(torch.special.erfc(torch.tensor(x / 2, dtype=F64).sqrt())),
                                               rel=1e-9)


def test_chain_of_two_tokens_follows_joint_target_law():
    """Speculative sampling with k=3 (and k=1) drafts from a different drafter produces the first two tokens with
    exactly the target's joint law T[s0,a]*T[a,b] (chi-square p > 1e-3); the same harness with a sampler
    that resamples from p after a rejection is detected (p < 1e-6) at the same seed."""
    t, d = _chain_tables()
    joint = (t[0][:, None] * t).reshape(-1)  # P(a, b | s0 = 0)
    assert float((joint[joint > 0]).min()) * N_CHAIN >= 5  # the chi-square approximation is valid
    assert ((t == 0) & (d > 0)).any() and ((d == 0) & (t > 0)).any()

    good = _first_two_tokens_histogram(verify_sampled, t, d, N_CHAIN, CHAIN_SEED)
    p_good = _chi2_pvalue(good, joint)
    assert p_good > 1e-3, f"speculative chain deviates from the target law: p = {p_good:.3g}"

    bad = _first_two_tokens_histogram(_broken_verify, t, d, N_BROKEN, CHAIN_SEED)
    p_bad = _chi2_pvalue(bad, joint)
    assert p_bad < 1e-6, f"negative control not detected: p = {p_bad:.3g}"


# ---------------------------------------------------------------- 3. greedy verification


def _greedy_reference(logits: list[list[float]], draft: list[int]) -> tuple[int, int]:
    choice = [row.index(max(row)) for row in logits]  # first index on ties
    for i, x in enumerate(draft):
        if x != choice[i]:
            return i, choice[i]
    return len(draft), choice[len(draft)]


def test_verify_greedy_matches_argmax_reference():
    """verify_greedy accepts the longest draft prefix equal to the target argmax (first index on ties) and
    returns the argmax at the first mismatch, or at the bonus position k when all k drafts match."""
    g = _gen(300)
    all_accepted = mismatches = 0
    for trial in range(400):
        k = trial % 6  # includes k = 0: no draft, the target's own token
        v = 2 + trial % 9
        logits = torch.randint(0, 3, (k + 1, v), generator=g).to(torch.float32)  # frequent ties
        choice = [row.index(max(row)) for row in logits.tolist()]
        draft = [c if float(torch.rand(1, generator=g)) < 0.8 else int(torch.randint(0, v, (1,), generator=g))
                 for c in choice[:k]]
        got = verify_greedy(logits, torch.tensor(draft, dtype=torch.long))
        assert got == _greedy_reference(logits.tolist(), draft), (logits, draft, got)
        assert isinstance(got[0], int) and isinstance(got[1], int)
        all_accepted += got[0] == k
        mismatches += got[0] < k
    assert all_accepted > 50 and mismatches > 50


def test_verify_greedy_all_accepted_gives_k_and_bonus_argmax():
    """When every draft equals the target argmax, verify_greedy returns (k, argmax of row k)."""
    logits = torch.tensor([[0.0, 5.0, 1.0, 0.0],
                           [3.0, 0.0, 1.0, 0.0],
                           [0.0, 0.0, 0.0, 9.0],
                           [0.0, 0.0, 7.0, 1.0]])
    assert verify_greedy(logits, torch.tensor([1, 0, 3])) == (3, 2)


def test_verify_greedy_ties_break_to_first_index():
    """With a tied maximum the target's choice is the lowest index: a draft of a later tied index is rejected."""
    logits = torch.tensor([[1.0, 4.0, 0.0, 4.0],
                           [2.0, 2.0, 2.0, 2.0]])
    assert verify_greedy(logits, torch.tensor([3])) == (0, 1)
    assert verify_greedy(logits, torch.tensor([1])) == (1, 0)


# ---------------------------------------------------------------- 6. reproducibility


@pytest.mark.parametrize("with_q", [True, False])
def test_verify_sampled_is_reproducible_for_a_seed(with_q):
    """The same generator seed gives the same verify_sampled result every time, whatever the global RNG does."""
    g = _gen(600)
    k, v = 4, 50
    p = torch.softmax(torch.randn(k + 1, v, generator=g), -1)
    q = torch.softmax(torch.randn(k, v, generator=g), -1) if with_q else None
    draft = torch.randint(0, v, (k,), generator=g)
    for seed in (0, 1, 12345):
        outputs = set()
        for rep in range(20):
            torch.manual_seed(1000 + rep)  # perturb the global RNG: it must not be used
            outputs.add(verify_sampled(p, draft, q, _gen(seed)))
        assert len(outputs) == 1, (seed, outputs)
    # and the seed matters: different seeds do not all give the same answer
    assert len({verify_sampled(p, draft, q, _gen(s)) for s in range(40)}) > 1


# ---------------------------------------------------------------- 7. p == q


def test_identical_target_and_draft_accept_everything():
    """If q == p at every position, every drafted token has acceptance probability 1 and verify_sampled
    accepts all k drafts, then draws the bonus token from p at position k."""
    g = _gen(700)
    for trial in range(60):
        k = 1 + trial % 5
        v = 2 + trial % 11
        p = torch.stack([_rand_dist(v, g, zero_frac=0.3) for _ in range(k + 1)])
        if trial % 2:
            p = p.float()  # also in the float32 the runtime uses
        q = p[:k].clone()
        draft = torch.stack([torch.multinomial(q[i], 1, generator=g)[0] for i in range(k)])
        for i in range(k):
            for x in (q[i] > 0).nonzero().squeeze(-1).tolist():
                assert float(accept_probability(p[i], q[i], x)) == 1.0
        bonus = int(torch.randint(0, v, (1,), generator=g))
        p[k] = 0.0
        p[k, bonus] = 1.0
        for seed in range(10):
            assert verify_sampled(p, draft, q, _gen(seed)) == (k, bonus)
    # One-hot target on the deterministic draft (draft_probs=None) is accepted with probability 1 too.
    p = torch.eye(5, dtype=F64)[[3, 1, 4]]
    assert float(accept_probability(p[0], None, 3)) == 1.0
    assert verify_sampled(p, torch.tensor([3, 1]), None, _gen(0)) == (2, 4)
