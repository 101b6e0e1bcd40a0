"""The GGUF block kernel (specx/gpu/qmatmul.py): its source run in Triton's interpreter on the CPU (every block
type, 1 to 17 rows, launches with and without split columns, a bias, an output that is a column slice), held to
gguf's values times x in float64; how a matrix is cut depends on the matrix alone; a fused matrix of mixed parts.
The same kernel compiled for a GPU: tests/gpu/test_qmatmul_gpu.py."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import interpreted
from specx.cpu.qweight import reference
from specx.cpu.quant_ref import error_bound, random_weight
from specx.gpu import blocks, qmatmul

pytest.importorskip("triton", reason="Triton (the kernel's compiler and interpreter) is not installed")


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    from test_dense_blocks import block_gguf

    return block_gguf(tmp_path_factory.mktemp("tiny") / "qwen2.gguf", "qwen2")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, tiny_gguf):
    """Every case's kernel outputs, computed once in a process with TRITON_INTERPRET=1."""
    path = tmp_path_factory.mktemp("interpreted") / "out.npz"
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, str(Path(interpreted.__file__)), str(path), str(tiny_gguf)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(np.load(path))


@pytest.mark.parametrize("case", interpreted.cases(), ids=lambda c: c[0])
def test_the_kernel_computes_ggufs_values_times_x(outputs, case):
    """Each output within float32 rounding of Σ x·w over gguf's values (float64 reference), the bias added; the
    columns beside the slice it writes untouched; a row's result the same whether 1, 5 or 17 rows came."""
    key, name, rows, cols, seed, spec, bias = case
    q, x, b = interpreted.inputs(name, rows, cols, seed, bias)
    want = reference(x.numpy(), [q]) + (0 if b is None else b.numpy().astype(np.float64))
    bound = error_bound(x.numpy(), [q]) * 1e-6 + 1e-30
    for t in interpreted.ROWS:
        wide = outputs[f"{key}/{t}"]
        assert np.isnan(wide[:, :4]).all() and np.isnan(wide[:, 4 + rows:]).all()
        got = wide[:, 4:4 + rows].astype(np.float64)
        assert (np.abs(got - want[:t]) <= bound[:t]).all(), f"{key} T={t}: {np.abs(got - want[:t]).max()}"
        assert np.array_equal(got, outputs[f"{key}/17"][:t, 4:4 + rows])


def test_the_decoder_running_the_kernel_matches_the_cpu_lean_decoder(outputs, tiny_gguf):
    """The dense decoder whose block matrices run the kernel (interpreted: every fused part, bias, slice and
    embedding as on a GPU) gives the lean CPU decoder's logits within float noise: prefill and cached steps."""
    from test_decoder import ids, near

    from specx.decoder.lm import load

    lean = load(tiny_gguf, mode="f32")
    tokens = ids(9, sum(interpreted.DECODER_TOKENS))
    first = interpreted.DECODER_TOKENS[0]
    want = torch.cat([lean.forward(tokens[:first])] + [lean.forward([t]) for t in tokens[first:]])
    near(torch.from_numpy(outputs["decoder"]), want)


def test_a_launch_depends_on_the_matrix_alone():
    """launch_for takes no row count (a row's bits cannot depend on the others); its splits divide the chunks in
    whole steps, each at least MIN_CHUNKS long, and aim at WAVES programs per multiprocessor."""
    import inspect

    assert "t" not in inspect.signature(qmatmul.launch_for).parameters
    for rows, cols in ((1536, 8960), (17920, 1536), (4096, 14336), (128256, 4096), (896, 896), (64, 256)):
        l = qmatmul.launch_for(rows, cols, 132)
        chunks = cols // 64
        assert l.splits * l.per_split == chunks and l.per_split % l.chunks == 0
        assert l.splits == 1 or l.per_split >= qmatmul.MIN_CHUNKS
        programs = math.ceil(rows / l.block) * l.splits
        assert l.splits == 1 or programs <= 4 * qmatmul.WAVES * 132
    assert qmatmul.launch_for(1536, 8960, 132).splits > 1 and qmatmul.launch_for(128256, 4096, 132).splits == 1


def test_a_fused_matrix_of_mixed_parts_is_their_rows_stacked():
    """A BlockMatrix of a Q4_K, a Q6_K and a Q3_K part (dense: no planes) computes each part's rows in its
    columns, the bias split alike (off a GPU: gguf's values in float32), and embeds as one table."""
    rng = np.random.default_rng(5)
    group = [random_weight(n, r, 256, rng, False) for n, r in (("Q4_K", 8), ("Q6_K", 4), ("Q3_K", 4))]
    m = qmatmul.from_file(group, torch.float32, "cpu")
    assert m.shape == (16, 256) and m.formats() == ["Q4_K", "Q6_K", "Q3_K"]
    assert isinstance(m.parts[2], torch.Tensor)
    x, bias = torch.randn(3, 256), torch.randn(16)
    want = reference(x.numpy(), group) + bias.numpy()
    assert np.allclose(m.linear(x, bias).numpy(), want, rtol=1e-5, atol=1e-5)
    table = qmatmul.from_file(group[:1], torch.float32, "cpu")
    ids = torch.tensor([7, 0, 7])
    assert torch.equal(table.embed(ids), blocks.dequantize(table.parts[0])[ids])
    said = qmatmul.describe(set(m.formats()))
    assert "Q4_K/Q6_K" in said and "Q3_K dequantized" in said


SPILL_BYTES = 64   # a few registers' worth: ptxas 13 (Triton 3.9) spills 8-32 bytes in some variants at the default
#                   launch (benchmarks/results/2026-11-28-gpu-blocks/registers-*.out); 64 rows x 4 chunks spilled up to 1.5 KB


@pytest.mark.parametrize("capability", [86, 90])   # RTX 30xx (whose code runs on the 40xx too), H100/H200
def test_the_kernel_compiles_for_each_gpu_generation_without_spilling(capability, capsys, monkeypatch, tmp_path):
    """Every block type's kernel at the default launch compiles to machine code (Triton's own ptxas, no GPU
    needed) for the GPUs users run, in bfloat16 and float16, whole and split, its pointers and sizes 16-aligned
    as at run time: no register spills to speak of (Triton's ptxas -v log), shared memory within the 99 KiB a
    consumer GPU's block may take, and its loads pipelined into shared memory (cp.async) but for IQ4's grid
    lookups; the split sums compile too."""
    import re

    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile as compile_kernel

    from specx.gpu import triton_kernels as tk

    target, launch = GPUTarget("cuda", capability, 32), qmatmul.Launch()
    monkeypatch.setattr(knobs.nvidia, "dump_ptxas_log", True)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))   # compiled here, so ptxas runs and logs

    def build(fn, types, consts, **options):
        aligned = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if a in types and a != "T"}
        return compile_kernel(ASTSource(fn, {**types, **{k: "constexpr" for k in consts}},
                                        constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()},
                                        attrs=aligned), target=target, options=options)

    for name, f in sorted(blocks.FORMATS.items()):
        for half, split in (("bf16", False), ("fp16", True)):
            types = {"x_ptr": f"*{half}", "y_ptr": f"*{half}", "part_ptr": "*fp32", "bias_ptr": f"*{half}",
                     "lo_ptr": "*u8", "hi_ptr": "*u8", "d_ptr": "*fp16", "sc_ptr": "*i8", "dmin_ptr": "*fp16",
                     "m_ptr": "*fp16" if f.rule == blocks.MIN else "*u8", "lut_ptr": "*fp32", "T": "i32", "N": "i32",
                     "K": "i32", "stride_x": "i32", "stride_y": "i32"}
            consts = dict(HB=f.high_bits, S=f.span, G=f.group, SC=f.group_scales, RULE=qmatmul.RULES[f.rule],
                          Z=f.zero, PER=8, SPLIT=split, BIAS=not split, F32=False, BN=launch.block, CH=launch.chunks)
            kernel = build(tk.block_matmul, types, consts, num_warps=launch.warps, enable_fp_fusion=True,
                           num_stages=1 if f.rule == blocks.LUT else launch.stages)
            assert kernel.metadata.shared <= 99 * 1024, (name, kernel.metadata.shared)
            assert f.rule == blocks.LUT or "async_copy_global_to_local" in kernel.asm["ttgir"], name
            report = capsys.readouterr().out   # the ptxas -v log of Triton's own compile
            spills = [int(n) for n in re.findall(r"(\d+) bytes spill stores", report)]
            assert spills and max(spills) <= SPILL_BYTES, (name, half, report[-400:])
    build(tk.sum_splits, {"part_ptr": "*fp32", "y_ptr": "*bf16", "bias_ptr": "*bf16", "T": "i32", "N": "i32",
                          "stride_y": "i32"}, dict(SPLITS=7, BIAS=True, BLOCK=qmatmul.SUM_BLOCK), enable_fp_fusion=True)
