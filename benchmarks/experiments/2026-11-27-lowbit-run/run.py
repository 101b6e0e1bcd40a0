#!/usr/bin/env python3
"""A lower-bit copy of the target's own layers as its drafter, measured end to end (issue 36).

    PYTHONPATH=. python benchmarks/experiments/2026-11-27-lowbit-run/run.py [--format Q2_K] [--repeats 3]

The copy: every layer matrix of the target dequantized and requantized (Q2_K: q2k_quant.py, round to nearest;
Q4_0: the gguf package's), the target's own embedding, norms and output layer shared, its own KV cache and
VocabTrim head, run by specx's ModelDrafter with copies from the context (as `--drafter X.gguf+ngram`), policy
auto. Against plain decoding of the same loaded target, greedy, bench prompts (two per category), 128 tokens,
alternating; outputs compared (lossless: equal)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from q2k_quant import quantize_q2_k   # noqa: E402

TARGET = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser() / \
    "qwen2.5-coder-1.5b.gguf"


def requantize(m, fmt: str):
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    from specx.cpu.qweight import BLOCKS, QWeight, dequantize

    dense = np.ascontiguousarray(dequantize(m), dtype=np.float32)
    data = quantize_q2_k(dense) if fmt == "Q2_K" else quantize(dense, GGMLQuantizationType[fmt]).reshape(-1)
    return QWeight(BLOCKS[fmt][0], np.ascontiguousarray(data.view(np.uint8)), m.rows, m.cols)


def copy_drafter(target, fmt: str):
    """A ModelDrafter over a LeanLM of the target's layers in `fmt`, sharing everything else."""
    from specx.decoder import vocabtrim
    from specx.decoder.lm import LeanLM
    from specx.decoder.model import Decoder
    from specx.drafters.model import ModelDrafter

    w = target.model.weights
    layers = [replace(l, qkv=[requantize(m, fmt) for m in l.qkv], o=[requantize(m, fmt) for m in l.o],
                      gate_up=[requantize(m, fmt) for m in l.gate_up], down=[requantize(m, fmt) for m in l.down])
              for l in w.layers]
    config, tok = target.model.config, target.tokenizer
    usable = min(len(tok), config.vocab_size)
    head = vocabtrim.DraftHead(w.output, vocabtrim.keep_ids(tok, usable, vocabtrim.choose_keep(None, len(tok))),
                               usable)
    lm = LeanLM(Decoder(config, replace(w, layers=layers), None, target.model.mode), tok, f"{target.name}-{fmt}",
                eos=target.eos, kernels=f"kernels: a {fmt} copy of the target's layers", vocab=config.vocab_size,
                head=head)
    return ModelDrafter(lm, target.vocab_size, usable, ModelDrafter.CPU_WINDOW)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", default="Q2_K")
    ap.add_argument("--configs", default="copy+ngram",
                    help="compared with plain: any of copy, copy+ngram, ngram, self, self+ngram (comma-separated)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-category", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    a = ap.parse_args()

    import specx
    from specx.api import Pair
    from specx.bench import suite
    from specx.drafters.hybrid import HybridDrafter
    from specx.drafters.ngram import NgramDrafter
    from specx.policy.policy import DEFAULT_K, draft_cap
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from self_spec import run

    plain = specx.load(str(TARGET), "none")
    pairs = {"plain": plain}
    k = draft_cap(DEFAULT_K, "auto", False)
    for name in a.configs.split(","):
        if name.startswith("copy"):
            t = time.perf_counter()
            drafter = copy_drafter(plain.target, a.format)
            print(f"{a.format} copy built in {time.perf_counter() - t:.0f} s: "
                  f"{sum(m.nbytes for l in drafter.lm.model.weights.layers for m in (*l.qkv, *l.o, *l.gate_up, *l.down)) / 1e6:.0f}"
                  " MB of layers", flush=True)
            pairs[name] = Pair(plain.target, HybridDrafter(NgramDrafter(), drafter) if name.endswith("+ngram")
                               else drafter, k, f"drafter: {a.format} {name}")
        else:
            pairs[name] = specx.load(str(TARGET), name)
    names = list(pairs)
    prompts = suite.calibration(suite.bundled(), a.per_category)
    rates = {n: {} for n in names}   # name -> (category, prompt, rep) -> tok/s
    tokens = {}
    for rep in range(a.repeats):
        for i, p in enumerate(prompts):
            shift = (rep + i) % len(names)
            for name in names[shift:] + names[:shift]:
                out, stats = run(pairs[name], p.text, a.tokens)
                rates[name][(p.category, i, rep)] = len(out) / stats.decode_s
                tokens[(name, i, rep)] = out
                print(f"rep {rep} {p.category:<14} {name:<11} {len(out) / stats.decode_s:6.2f} tok/s "
                      f"(acceptance {stats.acceptance_rate:.2f}, {stats.mean_acceptance_length:.2f} a round)", flush=True)
    cats = sorted({c for c, _, _ in rates["plain"]})
    print("\ndecode tok/s over plain, median per category; outputs equal to plain")
    for name in names[1:]:
        ratio = {u: rates[name][u] / rates["plain"][u] for u in rates["plain"]}
        cells = [f"{c} {statistics.median(r for u, r in ratio.items() if u[0] == c):.2f}x" for c in cats]
        equal = sum(tokens[(name, i, rep)] == tokens[("plain", i, rep)] for _, i, rep in rates["plain"])
        print(f"{name}: " + " | ".join(cells) + f" | overall {statistics.median(ratio.values()):.2f}x; "
              f"{equal}/{len(ratio)} equal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
