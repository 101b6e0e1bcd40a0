"""specx's CPU kernel (cpu/rowgemm.c), float32 and half-float weights: right results, and a row's
result never depends on the rows verified with it."""
from __future__ import annotations

import pytest
import torch

from specx.cpu import rowgemm
from specx.cpu import fastpath

needs_kernel = pytest.mark.skipif(not rowgemm.available(), reason=f"rowgemm not built here: {rowgemm.why_not()}")


@needs_kernel
@pytest.mark.parametrize("k", [8, 13, 40])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 10])
def test_linear_matches_the_reference(k, n):
    """Every shape the blocking has a case for (rows and columns not multiples of the block, K not of 8)."""
    torch.manual_seed(k * n)
    w, b = torch.randn(n, k), torch.randn(n)
    for m in (1, 2, 3, 4, 5, 9, 65):
        x = torch.randn(m, k)
        assert torch.allclose(rowgemm.linear(x, w, b), x @ w.T + b, atol=1e-5, rtol=1e-5)
        assert torch.allclose(rowgemm.linear(x, w), x @ w.T, atol=1e-5, rtol=1e-5)


@needs_kernel
def test_a_row_is_bit_for_bit_the_same_in_any_batch():
    """Verifying k+1 tokens gives each the logits it would get decoded alone (chunks of 64 rows included)."""
    torch.manual_seed(0)
    w, b = torch.randn(37, 300), torch.randn(37)
    x = torch.randn(150, 300)
    alone = torch.cat([rowgemm.linear(x[i:i + 1], w, b) for i in range(len(x))])
    for m in (2, 3, 5, 8, 17, 64, 65, 130, 150):
        assert torch.equal(rowgemm.linear(x[:m], w, b), alone[:m]), m
    assert torch.equal(rowgemm.linear(x[40:47], w, b), alone[40:47])


@needs_kernel
@pytest.mark.parametrize("k", [8, 13, 40])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 10])
def test_half_float_weights_match_the_reference(k, n):
    """fp16 weights widened exactly: the float32 result on the same (rounded) weights, for every block shape
    (1–6 rows widened in registers, more rows through the widened copy)."""
    torch.manual_seed(k * n)
    w, b = torch.randn(n, k).half(), torch.randn(n)
    for m in (1, 2, 3, 4, 5, 6, 7, 9, 65):
        x = torch.randn(m, k)
        assert torch.allclose(rowgemm.linear(x, w, b), x @ w.float().T + b, atol=1e-5, rtol=1e-5), m
        assert torch.allclose(rowgemm.linear(x, w), x @ w.float().T, atol=1e-5, rtol=1e-5), m


@needs_kernel
def test_half_float_rows_are_bit_for_bit_the_same_in_any_batch_and_as_float32():
    """With fp16 weights a row's result is the same alone or among others, and the same as the float32
    kernel's on the widened weights (widening is exact; the arithmetic is the same)."""
    torch.manual_seed(1)
    w, b = torch.randn(37, 300).half(), torch.randn(37)
    x = torch.randn(150, 300)
    alone = torch.cat([rowgemm.linear(x[i:i + 1], w, b) for i in range(len(x))])
    for m in (2, 3, 4, 5, 6, 7, 8, 17, 64, 65, 150):
        assert torch.equal(rowgemm.linear(x[:m], w, b), alone[:m]), m
    assert torch.equal(rowgemm.linear(x, w.float(), b), alone)


@needs_kernel
@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() != "AVX512", reason="needs a CPU with AVX-512")
def test_the_avx512_build_gives_the_avx2_builds_bits():
    """Built with AVX-512VL's 32 registers (6×4 blocks) or for AVX2 (4×3), every output is the same bit for
    bit, float32 and half-float weights alike: a machine's speedup never changes a token."""
    compiler = rowgemm.c_compiler()
    wide, narrow = (rowgemm._open(rowgemm._build(compiler, rowgemm.flags(w))) for w in (True, False))
    torch.manual_seed(2)
    w32, b = torch.randn(131, 203), torch.randn(131)
    for w in (w32, w32.half()):
        for m in (1, 2, 3, 4, 5, 6, 7, 9, 13, 17, 25, 64, 70):
            x = torch.randn(m, 203)
            outs = []
            for lib, prefetch in ((wide, 1), (narrow, 0)):
                out = torch.empty(m, 131)
                run = lib.spx_linear_f16 if w.dtype == torch.float16 else lib.spx_linear
                assert run(x.data_ptr(), m, 203, w.data_ptr(), 131, b.data_ptr(), out.data_ptr(), 2, prefetch) == 0
                outs.append(out)
            assert torch.equal(*outs), (w.dtype, m)


@needs_kernel
def test_fp16_weights_run_on_rowgemm_and_leave_a_tied_embedding_alone(monkeypatch):
    """--quant fp16 with SPECX_KERNELS=rowgemm: half-float copies of the linear weights, float32 outputs
    close to the float32 model's; an embedding that shares its tensor with the head keeps float32."""
    monkeypatch.setenv("SPECX_KERNELS", "rowgemm")
    embedding = torch.nn.Embedding(40, 24)
    head = torch.nn.Linear(24, 40, bias=False)
    head.weight = embedding.weight
    model = torch.nn.Sequential(embedding, torch.nn.Linear(24, 24), head)
    x = torch.tensor([[1, 5, 7]])
    with torch.inference_mode():
        reference = model(x)
        assert fastpath.apply(model, "fp16").startswith("kernels: fp16 weight-only linears on specx rowgemm (2 layers")
        assert model[2].weight.dtype == torch.float16 and model[0].weight.dtype == torch.float32
        assert torch.allclose(model(x), reference, atol=2e-2)


@needs_kernel
def test_an_empty_input_gives_an_empty_output():
    assert rowgemm.linear(torch.randn(0, 16), torch.randn(5, 16)).shape == (0, 5)


@needs_kernel
def test_batched_and_strided_inputs_keep_their_shape():
    x = torch.randn(1, 6, 32).transpose(1, 2)[:, :5, :]   # (1, 5, 6), not contiguous
    w = torch.randn(4, 6)
    assert rowgemm.linear(x, w).shape == (1, 5, 4)
    assert torch.allclose(rowgemm.linear(x, w), x @ w.T, atol=1e-5)


@needs_kernel
def test_fast_path_swaps_float32_linears_without_copying_weights():
    model = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(), torch.nn.Linear(48, 16, bias=False))
    x = torch.randn(3, 64)
    with torch.inference_mode():
        reference = model(x)
        weight = model[0].weight
        assert fastpath.apply(model, "none").startswith("kernels: specx rowgemm float32 linears (2 layers")
        assert model[0].weight is weight
        assert torch.allclose(model(x), reference, atol=1e-5)


def test_a_failed_build_falls_back_to_onednn_and_says_why(monkeypatch, tmp_path):
    """No C compiler: the kernel is off, the model runs oneDNN's kernels, and the kernels sentence says why."""
    saved = dict(rowgemm._state)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("SPECX_KERNEL_CACHE", str(tmp_path / "kernels"))
    rowgemm._state.clear()
    try:
        assert not rowgemm.available()
        why = rowgemm.why_not()
        assert "compiler" in why or "CPU" in why
        model = torch.nn.Sequential(torch.nn.Linear(8, 8))
        if torch.backends.mkldnn.is_available():
            sentence = fastpath.apply(model, "none")
            assert sentence.startswith("kernels: oneDNN prepacked") and why in sentence
    finally:
        rowgemm._state.clear()
        rowgemm._state.update(saved)


@needs_kernel
def test_onednn_can_be_chosen(monkeypatch):
    monkeypatch.setenv("SPECX_KERNELS", "onednn")
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    if torch.backends.mkldnn.is_available():
        assert fastpath.apply(model, "none").startswith("kernels: oneDNN prepacked")
