"""Invariants of specx.engine.tree: tree data, mask and positions, greedy walk, and the sampling law."""
from __future__ import annotations

import pytest
import torch

from conftest import generator as _gen
from specx.engine.sampling import sample
from specx.engine.tree import ROOT, Tree, tree_mask, tree_positions, verify_tree_greedy, verify_tree_sampled
from specx.engine.verify import accept_probability, residual, verify_greedy, verify_sampled

F64 = torch.float64

pytestmark = pytest.mark.usefixtures("one_thread_module")


#   root ─ 0:a ─ 2:c ─ 4:e
#        └ 1:b ─ 3:d
SHAPE = Tree((10, 11, 12, 13, 14), (ROOT, ROOT, 0, 1, 2))


def test_mask_and_positions_follow_the_ancestry():
    """Row r sees the root and exactly its ancestors (and itself); positions are start + depth."""
    mask = tree_mask(SHAPE)
    assert mask.tolist() == [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0],
                             [1, 0, 1, 0, 1, 0], [1, 1, 0, 1, 0, 1]]
    assert tree_positions(SHAPE, 7).tolist() == [7, 8, 8, 9, 9, 10]
    assert SHAPE.path(4) == [0, 2, 4] and SHAPE.children(ROOT) == [0, 1] and SHAPE.depth == 3


def test_a_chain_tree_has_the_causal_mask():
    """A chain's tree mask is the lower triangle and its positions consecutive: the chain's forward."""
    chain = Tree.chain([5, 6, 7])
    assert chain.is_chain() and not SHAPE.is_chain()
    assert torch.equal(tree_mask(chain), torch.ones(4, 4, dtype=torch.bool).tril())
    assert tree_positions(chain, 3).tolist() == [3, 4, 5, 6]


def test_a_parent_must_come_before_its_child():
    """A tree whose node names a later (or itself as) parent is refused."""
    with pytest.raises(ValueError):
        Tree((1, 2), (ROOT, 1))


def test_greedy_walk_accepts_the_child_carrying_the_argmax():
    """The walk follows the branch whose tokens equal the target's argmax at each row, ends with the argmax
    where no child carries it."""
    v = 16
    logits = torch.zeros(6, v)
    logits[0, 11] = logits[2, 13] = logits[4, 5] = 1.0   # root → b(1), b → d(3), d → 5 (bonus)
    assert verify_tree_greedy(logits, SHAPE) == ([1, 3], 5)
    logits[0, 11], logits[0, 3] = 0.0, 1.0                # root → 3: no child carries it
    assert verify_tree_greedy(logits, SHAPE) == ([], 3)


def test_greedy_tree_of_width_one_is_the_chain_verification():
    """On random logits with frequent ties, a chain tree's greedy walk gives verify_greedy's answer."""
    g = _gen(5)
    for trial in range(200):
        k, v = trial % 5, 2 + trial % 7
        logits = torch.randint(0, 3, (k + 1, v), generator=g).float()
        draft = torch.randint(0, v, (k,), generator=g)
        path, nxt = verify_tree_greedy(logits, Tree.chain(draft.tolist()))
        assert (len(path), nxt) == verify_greedy(logits, draft)


def test_sampled_tree_of_width_one_is_the_chain_verification_coin_for_coin():
    """A chain tree draws the same coins and residuals as verify_sampled: same result for the same seed."""
    g = _gen(6)
    for trial in range(100):
        k, v = 1 + trial % 4, 5
        p = torch.softmax(torch.randn(k + 1, v, generator=g), -1)
        q = torch.softmax(torch.randn(k, v, generator=g), -1) if trial % 2 else None
        draft = torch.randint(0, v, (k,), generator=g)
        path, nxt = verify_tree_sampled(p, Tree.chain(draft.tolist()), q, _gen(trial))
        assert (len(path), nxt) == verify_sampled(p, draft, q, _gen(trial))


# ---------------------------------------------------------------- exact law of one level of siblings


def _siblings_law(p, children, step=residual):
    """Exact law of the token a node commits when its children [(token, q or None)] are tried in turn:
    a·δ_x + (1 − a)·law(step(p, q, x), rest); p when none is left (verify_tree_sampled's walk)."""
    if not children:
        return p
    (x, q), rest = children[0], children[1:]
    a = accept_probability(p, q, x)
    out = (1 - a) * _siblings_law(step(p, q, x), rest, step)
    out[x] += a
    return out


def _keep_p(p, q, x):
    """The broken rule: after a rejection the next sibling is tried against p itself."""
    return p


def _sampled_then_top(q, x, extra):
    """Siblings after a sampled x: q's most likely other tokens, one-hot (they depend on x)."""
    order = [int(t) for t in torch.argsort(q, descending=True, stable=True) if int(t) != x]
    return [(t, None) for t in order[:extra]]


def _rand_dist(v, g):
    w = torch.rand(v, generator=g, dtype=F64) ** 2
    w[torch.rand(v, generator=g) < 0.25] = 0.0
    w[int(torch.randint(0, v, (1,), generator=g))] += 0.1
    return w / w.sum()


def _laws(p, q, rule):
    """The exact output laws of three sibling schemes under `rule`: deterministic distinct top siblings,
    one sampled child (averaged over x ~ q) then top-2 deterministic others, two children sampled i.i.d."""
    v = p.shape[0]
    top = [(int(t), None) for t in torch.argsort(q, descending=True)[:3]]
    mixed = sum(q[x] * _siblings_law(p, [(x, q)] + _sampled_then_top(q, x, 2), rule) for x in range(v) if q[x] > 0)
    iid = sum(q[x] * q[y] * _siblings_law(p, [(x, q), (y, q)], rule)
              for x in range(v) for y in range(v) if q[x] > 0 and q[y] > 0)
    return [_siblings_law(p, top, rule), mixed, iid]


def test_sibling_rejection_sampling_keeps_the_target_law_exactly_and_a_broken_rule_does_not():
    """For random p, q over small vocabularies the exact law of a node's committed token equals p to 1e-9 for
    one-hot siblings, a sampled child with one-hot others chosen after it, and i.i.d. sampled siblings;
    trying the next sibling against p instead of the residual is off by more than 1e-3 somewhere."""
    g = _gen(36)
    broken_off = 0.0
    for trial in range(150):
        v = 3 + trial % 6
        p, q = _rand_dist(v, g), _rand_dist(v, g)
        for law in _laws(p, q, residual):
            assert (law - p).abs().max() <= 1e-9, (trial, p, q, law)
        broken_off = max(broken_off, max(float((law - p).abs().max()) for law in _laws(p, q, _keep_p)))
    assert broken_off > 1e-3


# ---------------------------------------------------------------- chi-square of the real walk

V = 6
N_RUNS = 8_000
N_BROKEN = 4_000
SEED = 2026


def _tables():
    g = _gen(77)
    t = torch.softmax(torch.randn(V, V, generator=g, dtype=F64) * 0.8, -1)
    d = torch.softmax(torch.randn(V, V, generator=g, dtype=F64) * 1.2, -1)
    t[0, 5] = 0.0
    t = t / t.sum(-1, keepdim=True)
    return t, d


def _broken_walk(target_probs, tree, draft_probs, generator):
    """verify_tree_sampled with the sibling bug: the next sibling is tried against p, not the residual."""
    coins = torch.rand(len(tree.tokens), generator=generator, dtype=F64)
    path, node = [], ROOT
    while True:
        p = target_probs[node + 1]
        for child in tree.children(node):
            q = None if draft_probs is None else draft_probs[child]
            if coins[child] < accept_probability(p, q, tree.tokens[child]):
                path.append(child)
                node = child
                break
        else:
            return path, int(sample(p.unsqueeze(0), generator)[0])


def _one_hot(token):
    row = torch.zeros(V, dtype=F64)
    row[token] = 1.0
    return row


def _draft(d, start, g):
    """A depth-2 tree: x ~ D[start] (its q) and D's best other token (one-hot); under x, y ~ D[x] and D[x]'s
    best other (one-hot); under the sibling its best token (one-hot)."""
    x = int(torch.multinomial(d[start], 1, generator=g))
    alt = _sampled_then_top(d[start], x, 1)[0][0]
    y = int(torch.multinomial(d[x], 1, generator=g))
    y_alt = _sampled_then_top(d[x], y, 1)[0][0]
    z = int(torch.argmax(d[alt]))
    tree = Tree((x, alt, y, y_alt, z), (ROOT, ROOT, 0, 0, 1))
    q = torch.stack([d[start], _one_hot(alt), d[x], _one_hot(y_alt), _one_hot(z)])
    return tree, q


def _histogram(walk, t, d, n, seed):
    """Counts of the first two committed tokens (a second tree round when the first commits one)."""
    g = _gen(seed)

    def round_from(prev):
        tree, q = _draft(d, prev, g)
        rows = torch.stack([t[prev]] + [t[tok] for tok in tree.tokens])
        path, nxt = walk(rows, tree, q, g)
        return [tree.tokens[i] for i in path] + [nxt]

    counts = torch.zeros(V * V, dtype=F64)
    for _ in range(n):
        out = round_from(0)
        if len(out) < 2:
            out += round_from(out[0])
        counts[out[0] * V + out[1]] += 1
    return counts


def _chi2_pvalue(observed, law):
    if observed[law == 0].sum() > 0:
        return 0.0
    live = law > 0
    expected = observed.sum() * law[live]
    stat = float(((observed[live] - expected) ** 2 / expected).sum())
    df = int(live.sum()) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=F64), torch.tensor(stat / 2, dtype=F64)))


def test_tree_walk_commits_the_target_joint_law_and_a_broken_walk_is_detected():
    """Sampled tree verification of depth-2 trees (sampled and one-hot siblings) commits the first two tokens
    with the target's joint law T[0,a]·T[a,b] (chi-square p > 1e-3, fixed seed); the walk that tries siblings
    against p instead of the residual is detected (p < 1e-6)."""
    t, d = _tables()
    joint = (t[0][:, None] * t).reshape(-1)
    good = _chi2_pvalue(_histogram(verify_tree_sampled, t, d, N_RUNS, SEED), joint)
    assert good > 1e-3, f"tree sampling deviates from the target law: p = {good:.3g}"
    bad = _chi2_pvalue(_histogram(_broken_walk, t, d, N_BROKEN, SEED), joint)
    assert bad < 1e-6, f"negative control not detected: p = {bad:.3g}"


def test_cutting_a_copy_trees_main_copy_keeps_every_branch_whole():
    """cut_lead keeps the first `keep` nodes of the leading chain and every branch from the root, each branch's
    root-to-leaf tokens unchanged; a cut past the chain's end changes nothing."""
    from specx.engine.draft import Draft
    from specx.engine.tree import cut_lead, lead

    #   main 0-1-2-3-4, branches 5-6 and 7-8-9 from the root
    parents = (ROOT, 0, 1, 2, 3, ROOT, 5, ROOT, 7, 8)
    draft = Draft(list(range(100, 110)), None, "match3", parents=parents)
    assert lead(parents) == 5
    cut = cut_lead(draft, 2)
    assert cut.tokens == [100, 101, 105, 106, 107, 108, 109]
    tree = cut.tree
    assert [[cut.tokens[i] for i in tree.path(leaf)] for leaf in (1, 3, 6)] == [[100, 101], [105, 106],
                                                                                 [107, 108, 109]]
    assert cut_lead(draft, 5) is draft and cut_lead(draft, 9) is draft


def test_a_tree_drafted_instead_of_a_cut_copy_reaches_the_target_whole():
    """Where the policy cuts a copy to nothing and the drafter's other draft (a hybrid's model) is a tree, the
    tree is verified as it grew: cutting its tokens would leave its parents behind (it once did)."""
    from types import SimpleNamespace

    from specx.engine.draft import Draft, NoDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Sampling
    from specx.policy.base import Policy

    class CutsAll(Policy):
        def trim(self, draft):
            return Draft([], None, draft.source)

    tree = Draft([1, 2, 3], None, confidences=(0.5, 0.3, 0.9), parents=(ROOT, ROOT, 0))

    class Hybrid(NoDrafter):
        def propose(self, seq, ask):
            return Draft([7, 8], None, "match3")

        def instead(self, seq, ask):
            return tree

    loop = object.__new__(Generation)
    loop.stats, loop.policy, loop.drafter = SimpleNamespace(rounds=1), CutsAll(4), Hybrid()
    loop.tree, loop._room, loop.sampling, loop.generator, loop.stop = 8, 100, Sampling(), None, None
    loop.eos = frozenset()
    assert loop._propose([5, 6], 4, 4) is tree
