"""What a model's cache holds (decoder/held.py): the record claims a slot only where the cache holds what plain
decoding of the recorded tokens would, so an answer that keeps the prefix its prompt shares with it gives the
same tokens as an answer from an empty cache, whatever drafted before (chains, token trees, a self-draft)."""
from __future__ import annotations

import pytest
import torch

from specx.decoder.held import Held
from specx.engine.types import Round, Sampling
from test_decoder import VOCAB, hf_model, ids, save


def test_plain_writes_and_crops_are_followed():
    h = Held()
    h.wrote(0, [5, 6, 7])
    h.wrote(3, [8])
    assert h.upto(4) == [5, 6, 7, 8] and h.upto(2) == [5, 6]
    h.crop(2)
    h.wrote(2, [9])
    assert h.upto(10) == [5, 6, 9]


def test_a_write_past_a_gap_or_a_skipped_layer_forward_is_not_claimed():
    """A self-draft appends past the record without it (its forward skips layers); the next full forward then
    starts past the record's end, which cannot follow it until a crop brings the cache back within it."""
    h = Held()
    h.wrote(0, [5, 6])
    h.wrote(4, [1, 2])   # slots 2, 3 were written behind the record's back
    assert h.upto(6) == [5, 6]
    h.crop(2)
    h.wrote(2, [3])
    assert h.upto(3) == [5, 6, 3]


def test_a_tree_is_claimed_only_as_the_path_compact_keeps():
    h = Held()
    h.wrote(0, [5, 6, 7])
    h.wrote(2, [7, 10, 11, 12], tree=True)   # the root (the last context token) and three nodes
    assert h.upto(6) == [5, 6]
    h.compact(3, [4, 5])                      # the path 11, 12 behind the root
    assert h.upto(5) == [5, 6, 7, 11, 12]
    h.wrote(3, [20], tree=True)               # a drafter's tree, level by level from its first slot
    h.wrote(4, [21, 22], tree=True)
    h.compact(3, [3, 5])
    assert h.upto(5) == [5, 6, 7, 20, 22]


@pytest.mark.parametrize("after", ["crop", "plain write", "no tree"])
def test_a_tree_that_is_not_compacted_at_once_is_never_claimed(after):
    h = Held()
    h.wrote(0, [5, 6, 7])
    if after != "no tree":
        h.wrote(3, [8, 9], tree=True)
    if after == "crop":
        h.crop(5)
    elif after == "plain write":
        h.wrote(5, [10])
    h.compact(3, [3, 4])
    assert h.upto(10) == [5, 6, 7]


# ---- the engine: answers that keep what the cache holds equal answers from an empty cache -----------------

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny Llama target (LeanLM), and its own weights on another cache as its model drafter (drafts it
    accepts, so that trees are compacted along long paths)."""
    from specx.decoder.lm import load

    target = load(save(hf_model("llama", seed=0), tmp_path_factory.mktemp("held")))
    return target, target.fresh()


def drafters(kind: str, target, small):
    from specx.drafters import self as selfdraft
    from specx.drafters.model import ModelDrafter
    from specx.drafters.ngram import NgramDrafter
    from specx.drafters.skipsearch import Search, Shape
    from specx.engine.draft import NoDrafter

    if kind == "none":
        return NoDrafter(), 0, 0
    if kind == "ngram tree":
        return NgramDrafter(), 4, 8
    if kind == "model tree":
        return ModelDrafter(small, VOCAB, VOCAB), 4, 10
    return selfdraft.SelfDrafter(target, VOCAB, Search(3, ("f32",), Shape((1,)))), 3, 0


def answer(target, drafter, prompt, k, tree, reuse):
    from specx.engine.loop import Generation

    events = list(Generation(target, drafter, prompt, k=k, max_tokens=32, sampling=Sampling(), tree=tree,
                             reuse=reuse))
    return [t for e in events if isinstance(e, Round) for t in e.token_ids], events[-1].stats


def slots(lm, n: int) -> list[torch.Tensor]:
    keys = lm.cache.k.permute(0, 1, 2, 4, 3).reshape(*lm.cache.k.shape[:2], -1, lm.cache.k.shape[3])
    return [keys[:, :, :n].clone(), lm.cache.v[:, :, :n].clone()]


@pytest.mark.parametrize("kind", ["none", "ngram tree", "model tree", "self"])
def test_a_second_answer_keeps_the_shared_prefix_and_equals_a_fresh_one(models, kind):
    """After an answer (drafted its way), the record holds its prompt and answer but perhaps the last token, and
    the cache's slots there are plain decoding's bit for bit; the next answer, whose prompt shares that
    prefix, keeps it (reused) and gives the tokens of an answer from an empty cache; with reuse 0 it keeps none."""
    target, small = models
    target, small = target.fresh(), small.fresh()
    drafter, k, tree = drafters(kind, target, small)
    first = [0] + ids(10, 6) + ids(11, 3) + ids(10, 6)[:3] + ids(12, 4) + ids(10, 6)[:3]
    got, stats = answer(target, drafter, first, k, tree, None)
    assert stats.accepted > 0 if kind in ("model tree", "self") else stats.drafted > 0 or kind == "none"
    assert stats.tree_rounds > 0 if kind == "model tree" else True
    held, sequence = target.held, first + got
    assert held == sequence[:len(held)] and len(held) >= len(sequence) - 1
    plain = target.fresh()
    plain.forward(held, last_only=True)
    assert all(torch.equal(a, b) for a, b in zip(slots(target, len(held)), slots(plain, len(held))))

    second = sequence[:len(first) + 5] + ids(13, 4)
    again, stats = answer(target, drafter, second, k, tree, None)
    assert stats.reused == len(first) + 5
    fresh_drafter, _, _ = drafters(kind, plain := target.fresh(), small.fresh())
    assert again == answer(plain, fresh_drafter, second, k, tree, None)[0]
    _, stats = answer(target, drafter, second, k, tree, 0)
    assert stats.reused == 0


def test_another_user_of_the_cache_is_seen(models):
    """A caller's own record of the caches (a chat session's, a server's) is only an upper bound: where the
    model was used in between, the answer keeps what the cache really holds."""
    from specx.engine.draft import NoDrafter

    target = models[0].fresh()
    prompt = ids(20, 12)
    answer(target, NoDrafter(), prompt, 0, 0, None)
    target.reset()
    target.forward(prompt[:4] + ids(21, 6), last_only=True)   # someone else
    got, stats = answer(target, NoDrafter(), prompt, 0, 0, len(prompt) - 1)
    assert stats.reused == 4
    assert got == answer(target.fresh(), NoDrafter(), prompt, 0, 0, 0)[0]


def test_a_transformers_forward_cut_short_claims_nothing_and_the_next_answer_is_exact():
    """Ctrl-C inside torch after the first layer appended to transformers' cache: its layers then hold different
    lengths, so a crop would cut valid tokens from the others; the record claims nothing, and the next answer
    (which would keep its whole prompt otherwise) reads it again and equals an answer from an empty cache."""
    from conftest import tiny_lm
    from specx.engine.draft import NoDrafter

    lm, fresh = tiny_lm(), tiny_lm()
    prompt = ids(30, 12)
    answer(lm, NoDrafter(), prompt, 0, 0, None)
    layer = lm.model.model.layers[1]

    def stop(*_):
        raise KeyboardInterrupt

    hook = layer.register_forward_pre_hook(stop)
    with pytest.raises(KeyboardInterrupt):
        lm.forward(ids(31, 3))
    hook.remove()
    assert lm.held == []
    got, stats = answer(lm, NoDrafter(), prompt, 0, 0, None)
    assert stats.reused == 0
    assert got == answer(fresh, NoDrafter(), prompt, 0, 0, None)[0]
