"""Runs the block kernel (specx/gpu/triton_kernels.py) in Triton's interpreter on the CPU, for test_qmatmul.py:
`TRITON_INTERPRET=1 python interpreted.py OUT.npz TINY.gguf` saves every case's output (Triton reads the
variable when it is imported, so this runs in a process of its own). The cases and their inputs are made here
and by the test alike, from their seeds."""
from __future__ import annotations

import sys

import numpy as np
import torch

ROWS = (1, 5, 17)   # one row, a verify's, and two programs' worth (16 + 1)


def cases() -> list[tuple[str, str, int, int, int, tuple | None, bool]]:
    """(key, type, rows of W, cols, seed, launch (block, chunks, splits) or None for launch_for's, bias)."""
    from specx.gpu.blocks import FORMATS

    out = []
    for i, name in enumerate(sorted(FORMATS)):
        for launch in ((16, 1, 1), None):   # one step of one chunk, whole columns; the default, in splits
            out.append((f"{name}-{launch}", name, 40, 512, i, launch, launch is None))
    out.append(("Q4_K-wide", "Q4_K", 70, 1536, 99, None, True))   # rows not a multiple of the block, many splits
    return out


def inputs(name: str, rows: int, cols: int, seed: int, bias: bool):
    """(QWeight, x (17, cols) float32, bias or None) of a case."""
    from specx.cpu.quant_ref import random_weight

    rng = np.random.default_rng(seed)
    q = random_weight(name, rows, cols, rng, extreme=False)
    x = torch.from_numpy(rng.standard_normal((max(ROWS), cols), dtype=np.float32))
    b = torch.from_numpy(rng.standard_normal(rows, dtype=np.float32)) if bias else None
    return q, x, b


def launch_of(spec, rows: int, cols: int):
    from specx.gpu.qmatmul import Launch, launch_for

    if spec is None:
        return launch_for(rows, cols, 132)
    block, chunks, splits = spec
    return Launch(block, chunks, splits, cols // 64 // splits)


DECODER_TOKENS = (8, 1)   # the decoder case: a prefill, then a cached single-token step


def decoder_logits(gguf: str) -> np.ndarray:
    """The dense decoder on a tiny block GGUF (tests/decoder/test_dense_blocks.block_gguf), its block matrices
    run by the kernel: a prefill and single-token steps, every row's logits."""
    from test_decoder import ids

    from specx.decoder.dense_lm import load

    lm = load(gguf, "cpu", "float32", blocks=True)
    tokens = ids(9, sum(DECODER_TOKENS))
    first = DECODER_TOKENS[0]
    rows = [lm.forward(tokens[:first])] + [lm.forward([t]) for t in tokens[first:]]
    return torch.cat(rows).numpy()


def main(path: str, gguf: str) -> None:
    from specx.gpu import blocks, qmatmul

    assert qmatmul.interpreted(), "run with TRITON_INTERPRET=1"
    saved = {"decoder": decoder_logits(gguf)}
    for key, name, rows, cols, seed, spec, bias in cases():
        q, x, b = inputs(name, rows, cols, seed, bias)
        w = blocks.repack(q, "cpu")
        launch = launch_of(spec, rows, cols)
        for t in ROWS:
            wide = torch.full((t, rows + 9), float("nan"))   # the output a column slice of a wider one
            qmatmul.block_linear(x[:t], w, wide[:, 4:4 + rows], b, launch)
            saved[f"{key}/{t}"] = wide.numpy()
    np.savez(path, **saved)


if __name__ == "__main__":
    main(*sys.argv[1:3])
