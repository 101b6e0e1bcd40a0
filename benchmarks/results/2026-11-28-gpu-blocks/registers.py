"""The block kernel compiled for a GPU without one (Triton's own ptxas): registers a thread, spill bytes, shared
memory and whether the loads are pipelined into shared memory (cp.async), per block type and launch, with the
pointers and sizes 16-byte aligned as at run time. What chose qmatmul.Launch's defaults.

    python benchmarks/results/2026-11-28-gpu-blocks/registers.py [--capability 90]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import tempfile

import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, compile as compile_kernel

from specx.gpu import blocks, qmatmul
from specx.gpu import triton_kernels as tk

LAUNCHES = ((32, 2, 4), (32, 1, 4), (64, 1, 4), (64, 2, 4), (64, 4, 3), (128, 4, 3))   # rows, chunks, stages


def compiled(name: str, rows: int, chunks: int, stages: int, capability: int) -> tuple[int, int, int, bool]:
    """(registers, spill bytes, shared bytes, loads pipelined) of one type's kernel at one launch."""
    f = blocks.FORMATS[name]
    types = {"x_ptr": "*bf16", "y_ptr": "*bf16", "part_ptr": "*fp32", "bias_ptr": "*bf16", "lo_ptr": "*u8",
             "hi_ptr": "*u8", "d_ptr": "*fp16", "sc_ptr": "*i8", "dmin_ptr": "*fp16",
             "m_ptr": "*fp16" if f.rule == blocks.MIN else "*u8", "lut_ptr": "*fp32", "T": "i32", "N": "i32",
             "K": "i32", "stride_x": "i32", "stride_y": "i32"}
    consts = dict(HB=f.high_bits, S=f.span, G=f.group, SC=f.group_scales, RULE=qmatmul.RULES[f.rule], Z=f.zero,
                  PER=24, SPLIT=False, BIAS=False, F32=False, BN=rows, CH=chunks)
    fn = tk.block_matmul
    aligned = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names) if a in types and a != "T"}
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        kernel = compile_kernel(ASTSource(fn, {**types, **{k: "constexpr" for k in consts}},
                                          constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()},
                                          attrs=aligned), target=GPUTarget("cuda", capability, 32),
                                options=dict(num_warps=4, num_stages=1 if f.rule == blocks.LUT else stages,
                                             enable_fp_fusion=True))
    text = log.getvalue()
    regs = int(re.search(r"Used (\d+) registers", text).group(1))
    spill = int(re.search(r"(\d+) bytes spill stores", text).group(1))
    return regs, spill, kernel.metadata.shared, "async_copy_global_to_local" in kernel.asm["ttgir"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--capability", type=int, default=90)
    args = ap.parse_args()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()   # compile afresh, so that ptxas runs and logs
    knobs.nvidia.dump_ptxas_log = True
    print(f"triton {triton.__version__}, sm_{args.capability}, 4 warps; per launch (rows, chunks a step, stages): "
          "registers/spill bytes/shared KiB/pipelined")
    print("type   " + " | ".join(f"{r:>3} x{c} s{s}        " for r, c, s in LAUNCHES))
    for name in sorted(blocks.FORMATS):
        cells = []
        for rows, chunks, stages in LAUNCHES:
            regs, spill, shared, piped = compiled(name, rows, chunks, stages, args.capability)
            cells.append(f"{regs:3d}/{spill:4d}/{shared // 1024:2d}/{'y' if piped else 'n'}")
        print(f"{name:6s} " + " | ".join(f"{c:18s}" for c in cells))


if __name__ == "__main__":
    main()
