"""Token trees on the lean decoder (tiny random models of each family): a tree's rows are the bits of each branch
decoded alone, and compacting the accepted path leaves the cache plain decoding leaves."""
from __future__ import annotations

import torch

from specx.engine.tree import ROOT, Tree, tree_mask, tree_positions
from test_decoder import ids, pair  # noqa: F401  (the module's fixture: one tiny model per family)

PREFIX = 12
#   root ─ 0 ─ 2 ─ 4 ─ 6
#        ├ 1 ─ 3
#        └ 5 ─ 7
PARENTS = (ROOT, ROOT, 0, 1, 2, ROOT, 4, 5)


def _tree() -> Tree:
    return Tree(tuple(ids(21, len(PARENTS))), PARENTS)


def _verify_rows(lm, prefix, root, tree):
    lm.reset()
    lm.forward(prefix)
    return lm.forward([root] + list(tree.tokens), positions=tree_positions(tree, len(prefix)), mask=tree_mask(tree))


def test_every_tree_row_equals_its_branch_decoded_as_a_chain(pair):  # noqa: F811
    """Each node's logits in one tree-masked forward are the bits of its root-to-node branch fed as a chain
    after the same cache (positions shared between siblings, sliding windows included)."""
    _, lm, _ = pair
    prefix, root, tree = ids(20, PREFIX), ids(22, 1)[0], _tree()
    rows = _verify_rows(lm, prefix, root, tree)
    for node in range(len(tree.tokens)):
        lm.crop(PREFIX)
        branch = lm.forward([root] + [tree.tokens[i] for i in tree.path(node)])
        assert torch.equal(rows[node + 1], branch[-1]), node
    assert torch.equal(rows[0], branch[0])


CHUNKS = ((0, 2), (2, 4), (4, 8))   # the tree's nodes as a drafter forwards them: a level a call


def _grown_rows(lm, prefix, root, tree):
    """The nodes' logits forwarded CHUNKS a call after prefix + root, each call's mask naming its rows' ancestors
    among the nodes already cached."""
    mask, positions = tree_mask(tree)[1:, 1:], tree_positions(tree, len(prefix))[1:]
    lm.reset()
    lm.forward(prefix + [root])
    return [lm.forward(list(tree.tokens[a:b]), positions=positions[:b], mask=mask[a:b, :b]) for a, b in CHUNKS]


def test_a_tree_grown_over_calls_gives_each_node_the_bits_of_one_tree_forward(pair):  # noqa: F811
    """A tree forwarded a chunk a call (its earlier nodes stay cached, each new row seeing the prefix and its own
    ancestors among them, sliding windows by position) gives every node the bits of the tree in one forward."""
    _, lm, _ = pair
    prefix, root, tree = ids(20, PREFIX), ids(22, 1)[0], _tree()
    rows = _verify_rows(lm, prefix, root, tree)
    for (a, b), got in zip(CHUNKS, _grown_rows(lm, prefix, root, tree)):
        assert torch.equal(got, rows[1 + a:1 + b]), (a, b)


def _filled(lm):
    n = lm.cached
    k = lm.cache.k.permute(0, 1, 2, 4, 3).reshape(*lm.cache.k.shape[:2], -1, lm.cache.k.shape[3])
    return k[:, :, :n].clone(), lm.cache.v[:, :, :n].clone()


def test_compacting_the_accepted_path_leaves_plain_decodings_cache(pair):  # noqa: F811
    """After a tree verify, Cache.compact to a root-to-leaf path gives, bit for bit, the keys and values that
    decoding the same tokens one by one leaves, and the next forward's logits are the same bits."""
    _, lm, _ = pair
    prefix, root, tree = ids(20, PREFIX), ids(22, 1)[0], _tree()
    for leaf in (6, 3, 7):
        path = tree.path(leaf)
        _verify_rows(lm, prefix, root, tree)
        lm.compact(PREFIX + 1, [PREFIX + 1 + i for i in path])
        assert lm.cached == PREFIX + 1 + len(path)
        compacted, after = _filled(lm), lm.forward([5])
        lm.reset()
        for t in prefix + [root] + [tree.tokens[i] for i in path]:
            lm.forward([t])
        plain = _filled(lm)
        assert all(torch.equal(a, b) for a, b in zip(compacted, plain)), leaf
        assert torch.equal(after, lm.forward([5])), leaf


def _tokens(lm, drafter, prompt, k, tree, n=24, sampling=None):
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    events = list(Generation(lm.fresh(), drafter, prompt, k=k, max_tokens=n, sampling=sampling or Sampling(),
                             tree=tree))
    rounds = [e for e in events if isinstance(e, Round)]
    return [t for e in rounds for t in e.token_ids], rounds


def test_greedy_trees_equal_plain_decoding(pair, tmp_path):  # noqa: F811
    """The engine with token trees (an n-gram index with several continuations; a model drafter of another
    seed branching where it doubts) gives plain decoding's tokens, and some rounds did verify a tree."""
    from test_decoder import hf_model, save

    from specx.decoder.lm import load
    from specx.drafters.model import ModelDrafter
    from specx.drafters.ngram import NgramDrafter
    from specx.engine.draft import NoDrafter

    model, lm, family = pair
    prompt = [0] + ids(10, 6) + ids(11, 3) + ids(10, 6)[:3] + ids(12, 4) + ids(10, 6)[:3]
    plain, _ = _tokens(lm, NoDrafter(), prompt, 0, 0)
    copied, rounds = _tokens(lm, NgramDrafter(), prompt, 4, 8)
    assert copied == plain
    other = load(save(hf_model(family, seed=1), tmp_path / "drafter"))
    drafted, model_rounds = _tokens(lm, ModelDrafter(other, lm.vocab_size, lm.vocab_size), prompt, 4, 10)
    assert drafted == plain
    assert any(r.tree for r in rounds + model_rounds)
