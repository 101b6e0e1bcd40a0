"""The GGUF block kernel compiled for a GPU (the `gpu` tier: `pytest -m gpu`): within float noise of gguf's values
times x for every block type in bfloat16 and float16; every row bit-identical whatever other rows share the call
(with and without split columns); replayed from a CUDA graph as it ran eagerly. The dense decoder on blocks:
graphs equal eager, speculation equals plain decoding, and `specx run` on a GGUF keeps its blocks on the GPU."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

from specx.cpu.quant_ref import error_bound, random_weight  # noqa: E402
from specx.cpu.qweight import reference  # noqa: E402
from specx.gpu import blocks, qmatmul  # noqa: E402


def _case(name: str, rows: int, cols: int, seed: int = 0):
    q = random_weight(name, rows, cols, np.random.default_rng(seed), extreme=False)
    return q, blocks.repack(q, "cuda")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", sorted(blocks.FORMATS))
def test_the_kernel_computes_ggufs_values_times_x(name, dtype):
    """Every type, 1 to 17 rows, W's rows not a multiple of a program's: within float32 sums of Σ x·w over
    gguf's values (x as given, in its half dtype) and the output's rounding to that dtype; a bias added."""
    q, b = _case(name, 200, 1024)
    x = torch.randn(17, 1024, device="cuda").to(dtype)
    bias = torch.randn(200, device="cuda").to(dtype)
    xs = x.float().cpu().numpy()
    want = reference(xs, [q]) + bias.float().cpu().numpy()
    bound = error_bound(xs, [q]) * 1e-5 + np.abs(want) * 2.0 ** -7
    for t in (1, 2, 5, 16, 17):
        out = torch.empty(t, 200, device="cuda", dtype=dtype)
        qmatmul.block_linear(x[:t], b, out, bias)
        got = out.float().cpu().numpy()
        assert (np.abs(got - want[:t]) <= bound[:t]).all(), (t, np.abs(got - want[:t]).max())


@pytest.mark.parametrize("shape", [(1536, 8960), (17920, 1536)])   # columns split, and not
@pytest.mark.parametrize("name", ["Q4_K", "Q6_K", "Q8_0", "Q5_0"])
def test_a_rows_bits_never_depend_on_the_other_rows(name, shape):
    """Each row of a T-row call (T = 2 … 17) equals, bit for bit, that row computed alone."""
    rows, cols = shape
    _, b = _case(name, rows, cols, 1)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert (qmatmul.launch_for(rows, cols, sms).splits > 1) == (cols == 8960)
    x = torch.randn(17, cols, device="cuda", dtype=torch.bfloat16)
    alone = torch.cat([qmatmul.block_linear(x[r:r + 1], b, torch.empty(1, rows, device="cuda",
                                                                          dtype=torch.bfloat16)) for r in range(17)])
    for t in range(2, 18):
        got = qmatmul.block_linear(x[:t], b, torch.empty(t, rows, device="cuda", dtype=torch.bfloat16))
        assert torch.equal(got, alone[:t]), t


def test_a_graph_replays_the_kernel_as_it_ran():
    """block_linear captured in a CUDA graph (split columns and a fused matrix's column slices): replay gives
    the eager bits, with new inputs copied into the captured buffer."""
    rng = np.random.default_rng(2)
    group = [random_weight(n, r, 1536, rng, False) for n, r in (("Q4_K", 1536), ("Q6_K", 256), ("Q3_K", 256))]
    m = qmatmul.from_file(group, torch.bfloat16, "cuda")
    x = torch.randn(5, 1536, device="cuda", dtype=torch.bfloat16)
    eager = m.linear(x)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        m.linear(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = m.linear(x)
    graph.replay()
    assert torch.equal(out, eager)
    x.copy_(torch.randn_like(x))
    graph.replay()
    assert torch.equal(out, m.linear(x))
    want = reference(x.float().cpu().numpy(), group)
    assert np.allclose(out.float().cpu().numpy(), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


@pytest.fixture(scope="module")
def block_file(tmp_path_factory):
    from test_dense_blocks import block_gguf

    return block_gguf(tmp_path_factory.mktemp("blocks") / "qwen2.gguf", "qwen2")


def test_the_decoder_on_blocks_replays_graphs_as_eager_and_stays_near_dense(block_file):
    """DenseLM on a GGUF's blocks in bfloat16: graph replay equals eager bit for bit (T = 1, 5, 17); its logits
    within bfloat16 noise of the decoder on the same file dequantized to bfloat16."""
    from specx.decoder.dense_lm import load
    from specx.decoder.graphs import Graphs
    from test_decoder import ids

    lm = load(block_file, "cuda", "bfloat16", blocks=True)
    dense = load(block_file, "cuda", "bfloat16")
    assert "block kernels (Triton)" in lm.kernels
    assert lm.model.weights.nbytes < 0.6 * dense.model.weights.nbytes   # (its Q3_K parts are dense in both)
    tokens = ids(7, 100)
    graphed, eager = lm.model.new_cache(), lm.model.new_cache()
    for cache in (graphed, eager):
        lm.model.forward(cache, tokens[:40])
    graphs, at = Graphs(lm.model, graphed), 40
    for rows in (1, 5, 1, 17, 5, 1):
        got = graphs.forward(tokens[at:at + rows]).clone()
        assert torch.equal(got, lm.model.forward(eager, tokens[at:at + rows])), (rows, at)
        at += rows
    lm.reset(), dense.reset()
    a, b = lm.forward(tokens[:60]).float(), dense.forward(tokens[:60]).float()
    assert torch.nn.functional.cosine_similarity(a, b, dim=-1).min() > 0.995


def test_speculation_on_blocks_and_graphs_equals_plain_decoding(block_file):
    from specx.decoder.dense_lm import load
    from test_decoder import plain_and_ngram

    plain, speculated = plain_and_ngram(load(block_file, "cuda", "bfloat16", blocks=True), max_tokens=48)
    assert len(plain) == 48 and speculated == plain


def test_specx_run_on_a_gguf_keeps_its_blocks_on_the_gpu(block_file):
    """`specx run FILE.gguf` on a GPU budget its bfloat16 copy does not fit: the plan keeps the file's blocks (the
    memory and kernels sentences say so), and n-gram speculation and self-speculation give plain decoding's
    tokens."""
    from test_dense_gpu import run_drafters

    tokens = run_drafters(block_file, ("--mem-budget", "gpu=3MiB"), ("blocks gpu", "block kernels (Triton)"))
    assert tokens["none"] and tokens["ngram"] == tokens["none"] and tokens["self"] == tokens["none"]
