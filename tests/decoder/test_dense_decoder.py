"""The dense decoder (specx/decoder/dense.py) on tiny random models of each family: within float noise of
transformers' model and of the CPU lean decoder (model.Decoder) in float32, through prefill, cached decode,
crop, a token tree and a skip set; and DenseLM drives the engine to plain decoding's tokens."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from test_decoder import FAMILIES, SEQ, VOCAB, hf_model, ids, near, plain_and_ngram, reference, save
from specx.cpu import attention_ref
from specx.decoder import dense, dense_weights
from specx.decoder.dense_lm import DenseLM, load
from specx.decoder.lm import load as load_lean


@pytest.fixture(scope="module", params=FAMILIES)
def trio(request, tmp_path_factory):
    """(transformers model, the CPU LeanLM, a float32 DenseLM on the CPU) of one family."""
    model = hf_model(request.param)
    folder = save(model, tmp_path_factory.mktemp(request.param))
    return model, load_lean(folder), load(folder, "cpu", "float32")


def test_prefill_matches_transformers_and_the_cpu_decoder(trio):
    """One forward over a whole sequence: every position within float noise of transformers' and model.Decoder's."""
    model, lean, lm = trio
    lean.reset(), lm.reset()
    got = lm.forward(ids())
    near(got, reference(model, ids()))
    near(got, lean.forward(ids()))


def test_cached_decode_and_crop_match_transformers(trio):
    """Prefill, decode token by token, crop back and feed chunks again: every position matches transformers'
    forward over the whole sequence (the static cache, its length and sliding windows included)."""
    model, _, lm = trio
    tokens, want = ids(1), reference(model, ids(1))
    lm.reset()
    near(torch.cat([lm.forward(tokens[:20])] + [lm.forward([t]) for t in tokens[20:]]), want)
    lm.crop(25)
    assert lm.cached == 25
    near(torch.cat([lm.forward(tokens[i:i + 5]) for i in range(25, SEQ, 5)]), want[25:])


def test_a_token_tree_row_equals_its_branch_decoded_as_a_line(trio):
    """Siblings b and c after a (c sees a, not b; both at one position): c's logits are those of a, c in a line."""
    _, _, lm = trio
    prefix, (a, b, c) = ids(4, 12), ids(5, 3)
    mask = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool)
    lm.reset()
    lm.forward(prefix)
    tree = lm.model.forward(lm.cache, [a, b, c], positions=torch.tensor([12, 13, 13]), mask=mask)
    lm.crop(12)
    line = lm.forward([a, c])
    near(tree[[0, 2]], line)


def test_a_tree_grown_over_calls_matches_the_cpu_decoders(trio):
    """A tree forwarded a chunk a call over its cached earlier nodes (dense.tree_mask's (T, m + T) masks) gives
    each node model.Decoder's logits for the same calls, within float noise."""
    from test_tree_decoder import PREFIX, _grown_rows, _tree

    _, lean, lm = trio
    prefix, root, tree = ids(20, PREFIX), ids(22, 1)[0], _tree()
    for got, want in zip(_grown_rows(lm, prefix, root, tree), _grown_rows(lean, prefix, root, tree)):
        near(got, want)


def test_skipping_a_layer_matches_the_cpu_decoder_skipping_it(trio):
    """The skip set leaves the same layers out as model.Decoder.forward's."""
    _, lean, lm = trio
    lean.reset()
    near(lm.model.forward(lm.model.new_cache(), ids(6), skip={1}), lean.model.forward(lean.cache, ids(6), skip={1}))


def test_last_only_is_the_last_row(trio):
    _, _, lm = trio
    lm.reset()
    every = lm.forward(ids(3))
    lm.reset()
    assert torch.equal(lm.forward(ids(3), last_only=True), every[-1:])


def test_dense_lm_has_what_the_engine_reads(trio):
    """fresh() shares the weights, with a cache of its own; the attributes LeanLM offers."""
    _, lean, lm = trio
    lm.reset()
    lm.forward(ids(9, 5))
    other = lm.fresh()
    assert other.model is lm.model and other.cached == 0 and lm.cached == 5
    assert (lm.vocab_size, lm.eos_ids, lm.device.type, lm.max_context) == (VOCAB, {1}, "cpu", lean.max_context)
    assert lm.n_params > 0 and lm.weights == "F32" and "specx" in lm.kernels


def test_dense_lm_runs_the_speculative_engine_losslessly(trio):
    """The engine on a DenseLM: n-gram speculation gives plain decoding's tokens."""
    plain, speculated = plain_and_ngram(trio[2])
    assert len(plain) > 0 and speculated == plain


def test_a_full_cache_refuses_more_tokens(trio):
    from specx.decoder.model import ContextFull

    _, _, lm = trio
    small = dataclasses.replace(lm, model=dense.DenseDecoder(lm.model.config, lm.model.weights, context=30),
                                cache=None)
    small.forward(ids(7, 28))
    with pytest.raises(ContextFull):
        small.forward(ids(8, 3))
    assert small.cached == 28


@pytest.mark.parametrize("window, past", [(0, 0), (3, 0), (0, 3), (2, 3)])
def test_visible_slots_are_the_cpu_attentions(window, past):
    """dense.visible over a span equals cpu/attention_ref.visible on the filled slots (tree mask, shared
    positions, sliding window, a mask over the last `past` cached slots) and hides every slot after them."""
    g = torch.Generator().manual_seed(window)
    start, rows, span = 7, 5, 16
    tree = torch.rand(rows, past + rows, generator=g) < 0.5
    positions = start - past + torch.tensor([0, 1, 1, 2, 3, 3, 4, 4][:past + rows])
    want = attention_ref.visible(rows, start, window, tree, positions)
    got = dense.visible(torch.tensor([start]), positions, dense.tree_mask(rows, tree, "cpu"), span, window)
    assert torch.equal(got[:, :start + rows], want) and not got[:, start + rows:].any()


@pytest.mark.parametrize("adjacent", [False, True])
def test_rotate_on_rotary_rows_is_the_pairwise_rotation(adjacent):
    """dense.rotate with rotary_rows' signed lanes equals cpu/attention_ref.rotate's pairwise formula, within float
    noise, in either pair layout."""
    from specx.decoder.config import Rope
    from specx.decoder.model import rotary_tables

    g = torch.Generator().manual_seed(int(adjacent))
    x, positions = torch.randn(5, 6, 16, generator=g), torch.tensor([0, 3, 3, 9, 40])
    cos, sin = rotary_tables(Rope(1e4), 16, 64)
    rows = dense.rotary_rows(cos, sin, adjacent)[positions]
    near(dense.rotate(x, rows[:, 0], rows[:, 1], adjacent), attention_ref.rotate(x, cos[positions], sin[positions],
                                                                              adjacent))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rmsnorm_is_the_float32_formula(dtype):
    """dense.rmsnorm (torch's rms_norm in float32) equals RMSNorm written out in float32, rounded to x's dtype."""
    g = torch.Generator().manual_seed(3)
    x, w = (torch.randn(7, 64, generator=g) * 3).to(dtype), torch.randn(64, generator=g)
    want = attention_ref.reference_rmsnorm(x.float(), w, 1e-6).to(dtype)
    got = dense.rmsnorm(x, w, 1e-6)
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), want.float(), rtol=1e-5 if dtype == torch.float32 else 1e-2, atol=1e-5)


def test_random_weights_have_the_configs_shapes(trio):
    """random_weights (the device benchmark's models) fit the decoder and give finite logits."""
    _, _, lm = trio
    c = lm.model.config
    w = dense_weights.random_weights(c, torch.float32, "cpu")
    assert [m.shape for m in w.matrices()] == [m.shape for m in lm.model.weights.matrices()]
    decoder = dense.DenseDecoder(c, w, 64)
    assert torch.isfinite(decoder.forward(decoder.new_cache(), ids(11, 9))).all()


def _model_plan(devices, dtype="bfloat16", quant="none"):
    from types import SimpleNamespace

    return SimpleNamespace(devices=devices, dtype=dtype, quant=quant, context=64, native="", role="target",
                           blocks=False)


def test_a_half_precision_plan_on_one_gpu_loads_the_cuda_decoder(tmp_path):
    """placement._load: wholly on one GPU in bfloat16/float16 without bitsandbytes, a family the lean decoder
    runs → the dense decoder at the plan's context; a CPU split, nf4, float32 or no source keeps transformers'."""
    from specx.memory.placement import _dense_on_gpu, _load
    from specx.models.resolve import Source

    source = Source("hf", save(hf_model("qwen2"), tmp_path / "m"), "m")
    assert _load(_model_plan(("cuda:0",)), None, "target", "none", source).weights == "dense cuda:0 bfloat16 64"
    assert _load(_model_plan(("cuda:0",), "float16"), None, "drafter", "auto", source).weights.startswith("dense")
    for plan in (_model_plan(("cuda:0", "cpu")), _model_plan(("cuda:0",), quant="nf4"),
                 _model_plan(("cuda:0",), "float32")):
        assert not _dense_on_gpu(plan, source), plan
    assert not _dense_on_gpu(_model_plan(("cuda:0",)), None)


def test_load_lm_reads_a_dense_load(tmp_path):
    """models.resolve.load_lm with a "dense DEVICE DTYPE CONTEXT" load gives a DenseLM of that context,
    memoised (fresh handles on one model)."""
    from specx.models.resolve import Source, load_lm

    source = Source("hf", save(hf_model("qwen2"), tmp_path / "m"), "m")
    a, b = (load_lm(source, "auto", "dense cpu float32 64") for _ in range(2))
    assert isinstance(a, DenseLM) and a.max_context == 64 and a.model is b.model and a is not b
    assert a.name == "m" and "dense decoder" in a.kernels


def stand_in_graphs(monkeypatch) -> list:
    """graphs.Graphs without a GPU: the CUDA calls it makes stood in for, capture replaced by a stand-in that
    runs the captured step and replays it by running it again; the list of (rows, skip set) captured."""
    from specx.decoder import graphs

    class Replay:
        def __init__(self, step):
            self.replay = step

    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda *a: None)
    event = type("Event", (), {"record": lambda self: None, "synchronize": lambda self: None})
    monkeypatch.setattr(torch.cuda, "Event", lambda *a, **k: event())
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: self)
    captures = []

    def capture(self, buf, rows, slots, skip):
        captures.append((rows, skip))
        step = self._step(buf, rows, slots, skip)
        step()
        return Replay(step)

    monkeypatch.setattr(graphs.Graphs, "_capture", capture)
    return captures


def test_graph_bookkeeping_replays_what_eager_computes(trio, monkeypatch):
    """graphs.Graphs without a GPU: its static inputs per T, spans, tree-mask reset and shared logits, with
    capture replaced by a stand-in that re-runs the captured step, equal eager forwards on a second cache."""
    from specx.decoder import graphs

    stand_in_graphs(monkeypatch)
    monkeypatch.setattr(graphs, "MIN_SPAN", 16)
    _, _, lm = trio
    tokens = ids(12, 60)
    mask = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool)
    graphed, eager = lm.model.new_cache(), lm.model.new_cache()
    g = graphs.Graphs(lm.model, graphed)
    at = 0
    for rows, tree in ((9, None), (1, None), (3, mask), (3, None), (1, None), (5, None), (17, None), (1, None),
                       (3, None), (3, mask), (5, None), (1, None)):
        chunk, pos = tokens[at:at + rows], (torch.tensor([at, at + 1, at + 1]) if tree is not None else None)
        assert torch.equal(g.forward(chunk, pos, tree), lm.model.forward(eager, chunk, pos, tree)), (rows, at)
        assert graphed.length == eager.length
        at += rows if tree is None else 2
        for cache in (graphed, eager):
            cache.crop(at)
    assert g.captured == [1, 3, 5, 9, 17] and len(g.graphs) > 5   # spans 16, 32 and 64
    at = graphed.length   # a tree grown over two calls: the second's (T, m + T) mask has buffers of its own
    pos = torch.tensor([at, at + 1, at + 1, at + 2, at + 2])
    grown = torch.tensor([[1, 1, 0, 0, 0], [1, 0, 1, 0, 0]], dtype=torch.bool)
    for _ in range(2):   # captured, then replayed
        for chunk, p, m in ((tokens[:3], pos[:3], mask), (tokens[3:5], pos, grown)):
            assert torch.equal(g.forward(chunk, p, m), lm.model.forward(eager, chunk, p, m))
        assert graphed.length == eager.length == at + 5
        for cache in (graphed, eager):
            cache.crop(at)
    assert sorted(key[3] for key in g.graphs if key[0] == 2) == [3] and (2, 3) in g.rows
    assert not g.shapes


def test_graphs_of_a_skip_set_replay_its_partial_forward(trio, monkeypatch):
    """A self-draft's forward (layers left out) through graphs.Graphs, capture stood in (stand_in_graphs): each skip
    set gets graphs of its own that equal the eager partial forward, the full model's graphs still give the
    full forward, and only the MAX_SHAPES most recently used skip sets keep theirs."""
    from specx.decoder import graphs

    captures = stand_in_graphs(monkeypatch)
    monkeypatch.setattr(graphs, "MAX_SHAPES", 2)
    _, _, lm = trio
    assert lm.model.config.num_hidden_layers >= 2
    tokens = ids(13, 40)
    graphed, eager, full = (lm.model.new_cache() for _ in range(3))
    g = graphs.Graphs(lm.model, graphed)
    for cache in (graphed, eager, full):
        lm.model.forward(cache, tokens[:8])
    at = 8
    for rows, skip in ((1, {1}), (1, ()), (3, {1}), (1, {0}), (1, {1}), (1, {0, 1}), (1, {1}), (3, ())):
        chunk = tokens[at:at + rows]
        got = g.forward(chunk, skip=skip)
        assert torch.equal(got, lm.model.forward(eager, chunk, skip=skip)), (rows, skip)
        whole = lm.model.forward(full, chunk)   # the full model on a cache that never left a layer out
        assert not skip or not torch.equal(got, whole), (rows, skip)
        at += rows
    assert [c for c in captures if c[1]] == [(1, {1}), (3, {1}), (1, {0}), (1, {0, 1})]   # {1}'s kept: used last
    assert g.shapes == [frozenset({0, 1}), frozenset({1})]
    assert {key[2] for key in g.graphs} == {frozenset(), frozenset({0, 1}), frozenset({1})}


def test_self_speculation_on_the_dense_decoder_equals_plain_decoding(trio, monkeypatch):
    """`--drafter self` on a DenseLM (drafts through DenseLM.skipping, scoring on its cache): greedy tokens
    equal plain decoding's while the shape changes between rounds."""
    from specx.drafters.model import NoDrafter
    from test_self import generate, restless

    _, _, lm = trio
    seq = ids(4, 40)
    plain = generate(lm.fresh(), NoDrafter(), seq, 0, 32)
    target = lm.fresh()
    d = restless(target, monkeypatch)
    assert generate(target, d, seq, 4, 32) == plain and any(s.skip for s in d.search.tried)


def test_a_self_draft_on_the_dense_decoder_names_its_dtype(tmp_path):
    """The self-drafter's sentence on the dense decoder names the weights' dtype as its activations (the lean
    decoder's int8/float32 modes do not exist there)."""
    from specx.drafters import self as selfdraft

    folder = save(hf_model("qwen2"), tmp_path / "m")
    lm = load(folder, "cpu", "bfloat16")
    assert selfdraft.lean_modes(lm) == ("bfloat16",)
    drafter, said = selfdraft.for_target(lm, lm.vocab_size)
    assert drafter.shape.mode == "bfloat16" and said.endswith("bfloat16 activations")
