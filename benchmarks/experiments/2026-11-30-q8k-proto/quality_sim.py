"""What quantizing activations per 256 values (instead of per 32) costs in quality, simulated: every linear layer's
input rounded to int8 with one scale per B values (d = amax/127, q = rint(x/d)), then the float32 kernels on the
file's weights (specx's lean decoder, Python layer loop). Against the lean decoder in float32 (the file's weights,
float activations): teacher-forced greedy agreement over bench prompts and the perplexity of
benchmarks/data/quality.txt, as benchmarks/quality.py measures them; the real q8 kernels (per 32) beside.
Usage: python quality_sim.py [TARGET.gguf] [--prompts 10] [--tokens 64]"""
import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from quality import FIXTURE, TEXT, agreement, perplexity, reference_continuations  # noqa: E402


def fake_quant(x: torch.Tensor, block: int) -> torch.Tensor:
    """x rounded to int8 per `block` values; a row that is not whole blocks of 256 per 32 (K-quant weights, the
    only ones per 256 would serve, always have whole groups of 256)."""
    rows, k = x.shape
    block = block if k % block == 0 else 32
    b = x.float().reshape(rows, k // block, block)
    d = b.abs().amax(-1, keepdim=True) / 127
    inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
    return (torch.round((b * inv).clamp(-127, 127)) * d).reshape(rows, k)


def main():
    from specx.bench.suite import bundled
    from specx.cpu import layers
    from specx.decoder import linear
    from specx.models import resolve as models
    from specx.models.resolve import load_lm, resolve

    ap = argparse.ArgumentParser()
    ap.add_argument("target", nargs="?", default=str(FIXTURE / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    by_cat = {}
    for p in bundled():
        by_cat.setdefault(p.category, []).append(p)
    picked = [ps[i] for i in range(10) for ps in by_cat.values() if i < len(ps)][:args.prompts]
    layers.use(False)   # the Python layer loop: linear.matmul is where every layer's input passes
    source = resolve(args.target)
    ref = load_lm(source, "float32", "native f32")
    text_ids = ref.tokenizer(TEXT.read_text(encoding="utf-8"))["input_ids"]
    cont = reference_continuations(ref, picked, args.tokens)
    base = perplexity(ref, text_ids)
    print(f"reference: specx float32 (native f32), {len(picked)} prompts x {args.tokens} tokens, text {len(text_ids)} "
          f"tokens, perplexity {base:.4f}", flush=True)
    print("| activations | greedy agreement (teacher-forced) | mean exact prefix | perplexity | ratio |")
    print("|---|---|---|---|---|")
    original = linear.matmul
    for block in (32, 256):
        linear.matmul = lambda x, w, mode="f32", b=block: original(fake_quant(x, b), w, "f32")
        agree, prefix = agreement(ref, cont)
        ppl = perplexity(ref, text_ids)
        print(f"| int8 per {block} (simulated) | {agree:.1%} | {prefix:.1f} | {ppl:.4f} | {ppl / base:.4f} |", flush=True)
    linear.matmul = original
    models._LOADED.clear()
    q8 = load_lm(source, "float32", "native q8")
    agree, prefix = agreement(q8, cont)
    ppl = perplexity(q8, text_ids)
    print(f"| int8 per 32 (specx's q8 kernels) | {agree:.1%} | {prefix:.1f} | {ppl:.4f} | {ppl / base:.4f} |", flush=True)


if __name__ == "__main__":
    main()
