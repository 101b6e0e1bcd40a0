"""How the lean decoder runs a forward's rows through its layers changes no bit: the C layer loop (cpu/layers.c)
against model.py's Python loop on the same kernels for every forward the engine makes (prompt, cached decode,
token trees in one call and grown over calls, skipped layers, both activation modes), on tiny random models of
each family and on a GGUF of mixed types; and a long prompt in chunks against one call."""
from __future__ import annotations

import pytest
import torch

from specx.cpu import layers
from specx.engine.tree import ROOT, Tree, tree_mask, tree_positions
from test_decoder import ids, pair  # noqa: F401  (the module's fixture: one tiny model per family)
from test_decoder_gguf import gguf_model, write_gguf
from specx.decoder.lm import load

pytestmark = pytest.mark.skipif(not layers.active(), reason="the kernels or the C loop are not built here")
PARENTS = (ROOT, ROOT, 0, 1, 2, ROOT, 4, 5)   # a root with three branches, as test_tree_decoder's


def _forwards(lm, mode: str) -> list[torch.Tensor]:
    """The logits of a fixed sequence of forwards: a prompt, three cached decodes, a tree verified in one call,
    the same tree grown over two calls, and two drafts that skip layers."""
    model, out = lm.model, []
    tree = Tree(tuple(ids(21, len(PARENTS))), PARENTS)

    def step(tokens, **kw):
        out.append(model.forward(lm.cache, tokens, mode=mode, **kw))

    lm.reset()
    step(ids(20, 12))
    for t in ids(23, 3):
        step([t])
    prefix = lm.cached
    step([ids(22, 1)[0]] + list(tree.tokens), positions=tree_positions(tree, prefix), mask=tree_mask(tree))
    lm.crop(prefix + 1)
    mask, positions = tree_mask(tree)[1:, 1:], tree_positions(tree, prefix)[1:]
    for a, b in ((0, 3), (3, 8)):
        step(list(tree.tokens[a:b]), positions=positions[:b], mask=mask[a:b, :b])
    lm.crop(prefix)
    last = model.config.num_hidden_layers - 1
    step(ids(24, 2), skip={1}, last_only=True)
    lm.crop(prefix)
    step(ids(25, 3), skip={0, last})
    return out


def _both(lm, mode: str):
    was = layers.use(False)
    try:
        python = _forwards(lm, mode)
        layers.use(True)
        native = _forwards(lm, mode)
    finally:
        layers.use(was)
    return python, native


@pytest.mark.parametrize("mode", ["f32", "q8"])
def test_the_c_loop_gives_the_python_loops_bits(pair, mode):  # noqa: F811
    """Every forward's logits from the C loop equal the Python loop's bit for bit (biases, q/k norms, Gemma's
    extra norms and sliding windows, trees, skipped layers)."""
    _, lm, _ = pair
    python, native = _both(lm, mode)
    for i, (a, b) in enumerate(zip(python, native)):
        assert torch.equal(a, b), i


def test_the_c_loop_gives_the_python_loops_bits_on_block_weights(tmp_path):
    """The same on a GGUF whose matrices mix Q8_0, F16 and F32 (fused groups of different types) in q8 mode."""
    lm = load(write_gguf(gguf_model("qwen2"), "qwen2", tmp_path / "q.gguf", matrix_types=("Q8_0", "F16", "F32")),
              mode="q8")
    python, native = _both(lm, "q8")
    for i, (a, b) in enumerate(zip(python, native)):
        assert torch.equal(a, b), i


def test_a_mask_that_does_not_fit_is_refused_before_the_c_loop(pair):  # noqa: F811
    """A mask or positions of the wrong size: ValueError, as the Python loop's attention raises, before C
    reads past them."""
    _, lm, _ = pair
    lm.reset()
    lm.forward(ids(20, 5))
    with pytest.raises(ValueError):
        lm.model.forward(lm.cache, ids(21, 3), positions=torch.arange(5, 7), mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError):
        lm.model.forward(lm.cache, ids(21, 3), positions=torch.arange(5, 15), mask=torch.ones(3, 10, dtype=torch.bool))


@pytest.mark.parametrize("last_only", [False, True])
def test_a_long_prompt_in_chunks_gives_the_bits_of_one_call(pair, monkeypatch, last_only):  # noqa: F811
    """A prompt longer than PROMPT_CHUNK runs a chunk at a time: the logits (all rows, or the last) and the cache
    it leaves are those of one call over the whole prompt."""
    from specx.decoder import model as decoder_model

    _, lm, _ = pair
    prompt = ids(30, 30)
    outs, caches = [], []
    for chunk in (10_000, 7):
        monkeypatch.setattr(decoder_model, "PROMPT_CHUNK", chunk)
        lm.reset()
        outs.append(lm.model.forward(lm.cache, prompt, last_only=last_only))
        k = lm.cache.k.permute(0, 1, 2, 4, 3).reshape(*lm.cache.k.shape[:2], -1, lm.cache.k.shape[3])   # by slot
        caches.append((lm.cached, k[:, :, :30].clone(), lm.cache.v[:, :, :30].clone()))
    assert outs[0].shape == outs[1].shape == ((1 if last_only else 30), outs[0].shape[1])
    assert torch.equal(outs[0], outs[1])
    assert caches[0][0] == caches[1][0] == 30
    assert torch.equal(caches[0][1], caches[1][1]) and torch.equal(caches[0][2], caches[1][2])


def test_a_long_prompt_scores_only_its_last_chunk_for_its_last_row(pair, monkeypatch):  # noqa: F811
    """With last_only, the chunks before the last leave the output layer alone: one output-layer call, of one row."""
    from specx.decoder import linear, model as decoder_model

    _, lm, _ = pair
    monkeypatch.setattr(decoder_model, "PROMPT_CHUNK", 7)
    scored, matmul = [], linear.matmul
    monkeypatch.setattr(linear, "matmul", lambda x, ws, mode: (scored.append(len(x)) if ws[0] is
                                                              lm.model.weights.output else None) or matmul(x, ws, mode))
    lm.reset()
    lm.model.forward(lm.cache, ids(30, 30), last_only=True)
    assert scored == [1]
