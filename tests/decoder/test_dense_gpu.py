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


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_graph_replay_equals_eager_bit_for_bit(folder, dtype):
    """Prefill eagerly, then the same decode and verify calls (T = 1, 5, 17; spans grown past 256) through
    captured graphs and eagerly on a second cache: the same logits, bit for bit, first call and replays."""
    from specx.decoder.dense_lm import load
    from specx.decoder.graphs import Graphs

    lm = load(folder, "cuda", dtype, context=POSITIONS)
    assert lm.model.context == POSITIONS
    tokens = ids(1, 400)
    graphed, eager = lm.model.new_cache(), lm.model.new_cache()
    graphs = Graphs(lm.model, graphed)
    for cache in (graphed, eager):
        lm.model.forward(cache, tokens[:240])
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


def test_specx_run_in_bfloat16_on_the_gpu_uses_the_cuda_decoder_losslessly(tmp_path):
    """`specx run --dtype bfloat16` wholly on the GPU loads the CUDA decoder (the kernels sentence says so) and
    n-gram speculation gives plain decoding's tokens."""
    import json

    from cli_helpers import invoke, make_folder

    folder = make_folder(tmp_path / "tiny", layers=2)
    tokens = {}
    for drafter in ("none", "ngram"):
        result = invoke("run", str(folder), "w5 w9 w12 w5 w9 w5 w9", "--raw", "-n", "24", "-d", drafter, "--json",
                        "--dtype", "bfloat16")
        assert result.exit_code == 0, result.stderr
        assert "specx CUDA decoder" in result.stderr and "CUDA graphs" in result.stderr, result.stderr
        lines = [json.loads(x) for x in result.stdout.splitlines()]
        tokens[drafter] = [t for e in lines if e["type"] == "round" for t in e["token_ids"]]
    assert tokens["none"] and tokens["ngram"] == tokens["none"]
