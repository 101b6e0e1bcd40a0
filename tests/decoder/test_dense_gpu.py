"""The dense decoder on a CUDA device (the `gpu` tier: `pytest -m gpu`): CUDA graph replay gives eager
execution's bits, and greedy speculation on graphs gives plain decoding's tokens."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

from test_decoder import hf_model, ids, plain_and_ngram, save  # noqa: E402

POSITIONS = 1024   # the tiny configs allow 128 positions; the graph test prefills 240 and decodes spans past 256


@pytest.fixture(scope="module", params=["qwen2", "gemma3"])
def folder(request, tmp_path_factory):
    model = hf_model(request.param)
    model.config.max_position_embeddings = POSITIONS
    return save(model, tmp_path_factory.mktemp(request.param))


def graphed_and_eager(folder, dtype: str, seed: int, n: int, prefill: int):
    """(the DenseLM, n tokens, Graphs on one cache, a second cache for eager forwards), both caches holding
    the first `prefill` tokens."""
    from specx.decoder.dense_lm import load
    from specx.decoder.graphs import Graphs

    lm = load(folder, "cuda", dtype, context=POSITIONS)
    tokens = ids(seed, n)
    graphed, eager = lm.model.new_cache(), lm.model.new_cache()
    for cache in (graphed, eager):
        lm.model.forward(cache, tokens[:prefill])
    return lm, tokens, Graphs(lm.model, graphed), eager


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_graph_replay_equals_eager_bit_for_bit(folder, dtype):
    """Prefill eagerly, then the same decode and verify calls (T = 1, 5, 17; spans grown past 256) through
    captured graphs and eagerly on a second cache: the same logits, bit for bit, first call and replays."""
    lm, tokens, graphs, eager = graphed_and_eager(folder, dtype, 1, 400, 240)
    assert lm.model.context == POSITIONS
    at = 240
    for rows in (1, 5, 1, 17, 5, 1, 17, 1, 5):
        chunk = tokens[at:at + rows]
        got = graphs.forward(chunk).clone()
        want = lm.model.forward(eager, chunk)
        assert torch.equal(got, want), (rows, at)
        at += rows
    assert graphs.captured == [1, 5, 17] and len(graphs.graphs) > 3   # spans 256 and 512 were both used


def test_greedy_speculation_on_graphs_equals_plain_decoding(folder):
    """The engine on a graph-replaying DenseLM: n-gram speculation (verify T = k+1) gives plain decoding's tokens."""
    from specx.decoder.dense_lm import load

    plain, speculated = plain_and_ngram(load(folder, "cuda", "bfloat16"), max_tokens=48)
    assert len(plain) > 0 and speculated == plain


def run_drafters(model, options: tuple[str, ...], says: tuple[str, ...]) -> dict[str, list[int]]:
    """`specx run MODEL` with no drafter, n-grams and self-drafting (and `options`): each run's tokens, every run
    saying all of `says` on stderr."""
    import json

    from cli_helpers import invoke

    tokens = {}
    for drafter in ("none", "ngram", "self"):
        result = invoke("run", str(model), "w5 w9 w12 w5 w9 w5 w9", "--raw", "-n", "24", "-d", drafter, "--json",
                        *options)
        assert result.exit_code == 0, result.stderr
        assert all(s in result.stderr for s in says), result.stderr
        lines = [json.loads(x) for x in result.stdout.splitlines()]
        tokens[drafter] = [t for e in lines if e["type"] == "round" for t in e["token_ids"]]
    return tokens


def test_specx_run_in_bfloat16_on_the_gpu_uses_the_cuda_decoder_losslessly(tmp_path):
    """`specx run --dtype bfloat16` wholly on the GPU loads the CUDA decoder (the kernels sentence says so), and
    n-gram speculation and self-speculation give plain decoding's tokens."""
    from cli_helpers import make_folder

    tokens = run_drafters(make_folder(tmp_path / "tiny", layers=4), ("--dtype", "bfloat16"),
                          ("specx CUDA decoder", "CUDA graphs"))
    assert tokens["none"] and tokens["ngram"] == tokens["none"] and tokens["self"] == tokens["none"]


def test_graphs_with_layers_left_out_equal_eager_bit_for_bit(folder):
    """A self-draft's partial forward (drafters/self.py) replayed from its skip set's graphs gives the eager
    partial forward's bits, T = 1 and 16 (a draft step and a scoring forward), the full graphs untouched."""
    lm, tokens, graphs, eager = graphed_and_eager(folder, "bfloat16", 2, 200, 100)
    at = 100
    for rows, skip in ((1, (1,)), (1, ()), (16, (1,)), (1, (1,)), (1, ()), (16, ()), (1, (0, 1))):
        chunk = tokens[at:at + rows]
        got = graphs.forward(chunk, skip=skip).clone()
        assert torch.equal(got, lm.model.forward(eager, chunk, skip=skip)), (rows, skip)
        at += rows
    assert {key[2] for key in graphs.graphs} == {frozenset(), frozenset({1}), frozenset({0, 1})}


def test_self_speculation_on_graphs_equals_plain_decoding_while_its_shape_changes(folder, monkeypatch):
    """`--drafter self` on the CUDA decoder: drafts and scoring forwards replay graphs of each skip set, the
    shape changes every round, and the greedy tokens equal plain decoding's."""
    from specx.decoder.dense_lm import load
    from specx.drafters.model import NoDrafter
    from test_self import generate, restless

    lm = load(folder, "cuda", "bfloat16")
    seq = ids(4, 40)
    plain = generate(lm.fresh(), NoDrafter(), seq, 0, 48)
    target = lm.fresh()
    d = restless(target, monkeypatch)
    assert generate(target, d, seq, 4, 48) == plain and d.search.scored >= 2 and any(s.skip for s in d.search.tried)
    assert any(key[2] for key in target.graphs.graphs)   # skip sets replayed from graphs of their own


def test_greedy_token_trees_on_graphs_equal_plain_decoding(folder, monkeypatch):
    """Token trees (--tree 8) drafted by a model on the CUDA decoder and verified with their tree mask through
    the graphs give plain decoding's tokens, and trees were drafted."""
    from specx.decoder.dense_lm import load
    from specx.drafters.model import ModelDrafter, NoDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    lm = load(folder, "cuda", "bfloat16")
    seq = ids(5, 40)

    def rounds(drafter, k, tree=0):
        return [e for e in Generation(lm.fresh(), drafter, seq, k=k, max_tokens=48, sampling=Sampling(), tree=tree)
                if isinstance(e, Round)]

    plain = [t for e in rounds(NoDrafter(), 0) for t in e.token_ids]
    drafter = ModelDrafter(lm.fresh(), lm.vocab_size, lm.vocab_size)
    treed = rounds(drafter, 4, tree=8)
    assert [t for e in treed for t in e.token_ids] == plain
    assert any(e.tree for e in treed)


def test_a_tree_level_over_cached_nodes_replays_its_graph_bit_for_bit(folder):
    """A drafter's tree level over its cached earlier nodes ((T, m + T) mask, m + T positions) replayed from a
    graph of its own gives the eager forward's bits, first call and replays."""
    lm, tokens, graphs, eager = graphed_and_eager(folder, "bfloat16", 3, 120, 100)
    graphed = graphs.cache
    at = 100
    pos = torch.tensor([at, at + 1, at + 1, at + 2, at + 2])
    first = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool)
    grown = torch.tensor([[1, 1, 0, 0, 0], [1, 0, 1, 0, 0]], dtype=torch.bool)
    for _ in range(3):
        for chunk, p, m in ((tokens[100:103], pos[:3], first), (tokens[103:105], pos, grown)):
            got = graphs.forward(chunk, p, m).clone()
            assert torch.equal(got, lm.model.forward(eager, chunk, p, m))
        for cache in (graphed, eager):
            cache.crop(at)
    assert any(key[3] == 3 for key in graphs.graphs)
