"""A model drafter's token tree grows only where the policy's stops say it pays (drafters/branching.py), and the
cost model learns a tree's round by its rows and nodes (CostModel.observe_tree, tree_costs)."""
from __future__ import annotations

import pytest
import torch

from specx.drafters import branching
from specx.engine.draft import Ask, Draft
from specx.engine.tree import ROOT, Tree, judged
from specx.policy.base import Stops, TreeRound
from specx.policy.costmodel import MODEL, CostModel

VERIFY = {1: 0.30, 2: 0.42, 3: 0.45, 5: 0.50, 9: 0.58, 17: 0.80}   # seconds per target forward of n tokens
STEP = 0.05                                                        # seconds per drafter forward of one token


def _measured() -> CostModel:
    return CostModel(verify_s=dict(VERIFY), draft_step_s=STEP, draft_rows_s={1: STEP, 4: 0.06, 16: 0.09})


def _stops(cost: CostModel, nodes: int, **kw) -> Stops:
    levels, rows = cost.tree_costs(nodes)
    return Stops(floors=cost.survival_floors(nodes), level_costs=levels, node_costs=rows, **kw)


def test_a_chain_shaped_tree_stops_where_the_chain_does():
    """For a tree of one row a level, the price a node must pass to grow it is the chain's survival floor for
    its depth (drafting step plus the next token's verify share), so `pays` agrees with the chain's stop."""
    cost = _measured()
    stops = _stops(cost, 12)
    for m in range(1, 12):
        floor = cost.survival_floor(m)
        assert stops.level_costs[0] + stops.node_costs[m] == pytest.approx(floor)
        assert branching.pays(floor * 1.01, 1, m, m, stops) and not branching.pays(floor * 0.99, 1, m, m, stops)
    paced = _measured()   # drafting that makes tokens faster than plain decoding prices both at its pace
    for _ in range(10):
        paced.observe(4, 4, 4 * STEP, VERIFY[5])
    assert paced.pace(12) > 1.2
    stops, floors = _stops(paced, 12), paced.survival_floors(12)
    for m in range(1, 12):
        assert stops.level_costs[0] + stops.node_costs[m] == pytest.approx(floors[m - 1])


def test_a_wider_forward_costs_more_to_grow():
    """A drafter forward of more rows needs a likelier node to be worth running (its measured cost)."""
    stops = _stops(_measured(), 16)
    assert stops.level_costs[15] > stops.level_costs[3] > stops.level_costs[0]
    chance = stops.level_costs[3] + stops.node_costs[3]   # the next node is the 4th
    assert branching.pays(chance, 4, 3, 2, stops) and not branching.pays(chance, 16, 3, 2, stops)


def test_without_measurements_the_chain_floor_or_nothing_stops_growth():
    """Unmeasured tree costs fall back to the chain's floor for the depth; with no floors at all a tree grows."""
    assert branching.pays(0.0, 9, 9, 3, Stops())
    assert not branching.pays(0.4, 9, 9, 3, Stops(floors=(0.5,)))


def _child(chance: float, p: float = 0.5) -> branching.Child:
    return (chance, ROOT, int(chance * 1000), None, p)


def test_a_sibling_is_kept_only_where_its_chance_pays_its_verify_row():
    """The best child is always kept (its forward was paid for); another only where its chance covers its
    node's verify row; with no costs measured, down to FLOOR, at most MAX_WIDTH and the room left."""
    cheap = Stops(node_costs=(0.05,) * 16)
    dear = Stops(node_costs=(0.05, 0.3) + (0.05,) * 14)
    candidates = [_child(0.04), _child(0.2), _child(0.01)]
    assert [c[0] for c in branching.level(candidates, 0, 16, cheap)] == [0.2]
    assert [c[0] for c in branching.level(candidates, 0, 16, dear)] == [0.2]   # the best, below no bar
    assert [c[0] for c in branching.level([_child(0.9), _child(0.2)], 0, 16, dear)] == [0.9]
    assert [c[0] for c in branching.level([_child(0.9), _child(0.2)], 0, 16, cheap)] == [0.9, 0.2]
    assert [c[0] for c in branching.level(candidates, 0, 16, Stops())] == [0.2, 0.04]
    many = [_child(0.1 + i / 100) for i in range(8)]
    assert len(branching.level(many, 0, 16, Stops())) == branching.MAX_WIDTH
    assert len(branching.level(many, 0, 2, Stops())) == 2


def test_doubted_nodes_are_not_grown():
    """A node the drafter gave less than the confidence stop is a leaf, as a chain ends after it."""
    kept = [_child(0.5, p=0.5), _child(0.3, p=0.3)]
    assert branching.growing(kept, Stops(min_confidence=0.4)) == [0]
    assert branching.growing(kept, Stops()) == [0, 1]


def test_a_tree_round_is_timed_by_its_rows_not_its_depth():
    """A tree of 7 nodes, 3 deep, times a verify forward of 8 tokens (not the chain of 4's), its drafter forwards
    by their rows (a one-row forward is a drafting step), and is learnt as a chain of 3 for acceptance."""
    cost = CostModel(verify_s={1: 0.3, 4: 0.5})
    cost.observe_tree(TreeRound(nodes=7, depth=3, accepted=2, draft_s=0.2, verify_s=0.55,
                                levels=((1, 0.04), (3, 0.06), (7, 0.08))))
    assert cost.verify_s[8] == 0.55 and cost.verify_s[4] == 0.5
    assert cost.draft_rows_s == {1: 0.04, 3: 0.06, 7: 0.08} and cost.draft_step_s == 0.04
    assert cost.draft_time(5) == pytest.approx(0.07)
    track = cost.track(MODEL)
    assert track.tries == 1 and track.reached == {1: 1, 2: 1, 3: 1} and track.passed == {1: 1, 2: 1}


def _chain_draft(confidences):
    n = len(confidences)
    return Draft(list(range(n)), None, confidences=tuple(confidences), parents=tuple(range(-1, n - 1)))


def test_a_chain_tells_the_calibration_what_a_chain_round_does():
    """judged() of a chain-shaped tree is confidences[:accepted + 1] and accepted, as a chain's round adds."""
    g = torch.Generator().manual_seed(3)
    for trial in range(30):
        n = 1 + trial % 6
        confidences = torch.rand(n, generator=g).tolist()
        for accepted in range(n + 1):
            assert judged(_chain_draft(confidences), list(range(accepted))) == (tuple(confidences[:accepted + 1]),
                                                                               accepted)


def test_a_path_through_a_sibling_judges_the_first_choice_it_left():
    """Where the target took a second child, the drafter's first choice there was rejected: that is judged."""
    draft = Draft([10, 11, 12], None, confidences=(0.6, 0.3, 0.9), parents=(ROOT, ROOT, 1))
    assert draft.tree == Tree((10, 11, 12), (ROOT, ROOT, 1))
    assert judged(draft, [1, 2]) == ((0.6,), 0)
    assert judged(draft, [0]) == ((0.6,), 1)
    assert judged(Draft([10, 11], None, parents=(ROOT, ROOT)), [0]) == ((), 0)


@pytest.fixture(scope="module")
def drafter(tmp_path_factory):
    from test_decoder import hf_model, save

    from specx.decoder.lm import load
    from specx.drafters.model import ModelDrafter

    lm = load(save(hf_model("qwen2", seed=3), tmp_path_factory.mktemp("tree-drafter")))
    return ModelDrafter(lm, lm.vocab_size, lm.vocab_size)


def _grow(drafter, stops: Stops) -> Draft:
    from test_decoder import ids

    prompt = ids(4, 12)
    drafter.prefill(prompt)
    draft = drafter.propose(prompt, Ask(6, tree=12, stops=stops))
    drafter.commit_tree(draft, []) if draft.parents is not None else drafter.commit(len(draft.tokens), 0)
    return draft


def test_a_model_drafters_tree_stops_growing_where_the_stops_say(drafter):
    """A tiny random drafter doubts everywhere, so with no stops its tree branches and grows deeper than one
    level, one timed forward a level (a last one may find no child worth keeping); where no node's chance pays for the next forward, or every node is
    doubted, the tree is its first level."""
    free = _grow(drafter, Stops())
    assert free.parents is not None and free.tree.depth > 1 and len(free.levels) >= free.tree.depth
    assert all(rows >= 1 and seconds > 0 for rows, seconds in free.levels)
    dear = Stops(level_costs=(2.0,) * 16, node_costs=(0.0,) * 16)
    for stops in (dear, Stops(min_confidence=1.0)):
        first = _grow(drafter, stops)
        assert (first.tree.depth if first.parents is not None else len(first.tokens)) == 1
        assert len(first.levels) == 1


def test_a_tree_node_that_ends_the_answer_gets_no_children(drafter):
    """Nothing after an end-of-answer token is kept: where every first-level node is one, the tree stops there."""
    from test_decoder import ids

    free = _grow(drafter, Stops())
    first = [t for t, p in zip(free.tokens, free.parents) if p == -1]
    prompt = ids(4, 12)
    drafter.prefill(prompt)
    ended = drafter.propose(prompt, Ask(6, tree=12, stops=Stops(), eos=frozenset(first)))
    drafter.commit_tree(ended, []) if ended.parents is not None else drafter.commit(len(ended.tokens), 0)
    assert sorted(ended.tokens) == sorted(first) and len(ended.levels) == 1


def test_each_tree_level_forwards_only_its_new_nodes(drafter, monkeypatch):
    """A model drafter's level forward runs the nodes that level added, never again those already in its cache
    (they stay there, seen through the mask): the tree forwards' rows add up to the nodes forwarded, each forward
    appending to the cache as the previous one left it."""
    from test_decoder import ids

    lm, calls = drafter.lm, []
    forward = lm.forward

    def spy(tokens, **kw):
        calls.append((lm.cached, len(tokens)))
        return forward(tokens, **kw)

    monkeypatch.setattr(lm, "forward", spy)
    prompt = ids(4, 12)
    drafter.prefill(prompt)
    calls.clear()
    draft = drafter.propose(prompt, Ask(6, tree=12, stops=Stops()))
    drafter.commit_tree(draft, [])
    (first, unread), levels = calls[0], calls[1:]
    assert draft.parents is not None and len(levels) >= 2
    assert sum(rows for _, rows in levels) == drafter.forwarded
    assert [cached for cached, _ in levels] == [first + unread + sum(r for _, r in levels[:i]) for i in range(len(levels))]


def test_each_tree_nodes_scores_are_its_branch_decoded_as_a_line(drafter, monkeypatch):
    """Every node a level forward runs over the cached earlier nodes gets the bits of the prompt and its branch
    decoded as a line: the forward sees exactly the node's ancestors among them, at their positions."""
    from test_decoder import ids

    lm, rows = drafter.lm, []
    forward = lm.forward
    monkeypatch.setattr(lm, "forward", lambda tokens, **kw: rows.append(forward(tokens, **kw)) or rows[-1])
    prompt = ids(4, 12)
    drafter.prefill(prompt)
    rows.clear()
    draft = drafter.propose(prompt, Ask(6, tree=12, stops=Stops()))
    drafter.commit_tree(draft, [])
    tree, got, line = draft.tree, torch.cat(rows[1:]), lm.fresh()
    assert len(rows) > 2 and got.shape[0] == drafter.forwarded
    for node in range(got.shape[0]):
        line.reset()
        logits = line.forward(prompt + [tree.tokens[i] for i in tree.path(node)], last_only=True)
        assert torch.equal(got[node], logits[0]), node


def test_a_tree_ask_with_no_model_depth_reads_nothing(drafter, monkeypatch):
    """Where the policy lets the model draft nothing (model_k 0: only a copy may be drafted), a tree ask makes
    the model drafter read nothing, as a chain ask does: the context's unread tokens wait for the next draft,
    read together, instead of a forward each round that drafts nothing."""
    from test_decoder import ids

    calls = []
    forward = drafter.lm.forward
    monkeypatch.setattr(drafter.lm, "forward", lambda tokens, **kw: calls.append(len(tokens)) or forward(tokens, **kw))
    prompt = ids(4, 12)
    drafter.prefill(prompt)
    calls.clear()
    for tree in (0, 8):
        draft = drafter.propose(prompt + ids(5, 2), Ask(4, model_k=0, stops=Stops(), tree=tree))
        drafter.commit(len(draft.tokens), 0)
        assert (draft.tokens, calls) == ([], []), tree
