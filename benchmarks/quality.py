"""Quality guard for weight precisions: how far an fp16 / int8 / int4 target is from float32.

    python benchmarks/quality.py [TARGET.gguf] [--weights fp16,int8,int4] [--prompts 10] [--tokens 64]

Two measures, both against the float32 target (the same file, dequantized):
- greedy agreement: the float32 target's greedy continuation of each bench prompt (first `--tokens`
  tokens) is fed to each precision in one forward; agreement is the share of positions whose argmax
  equals the float32 token (teacher-forced top-1 agreement), plus the mean length of the exact prefix;
- perplexity of `benchmarks/data/quality.txt` (prose, code, arithmetic), and its ratio to float32.
Bars (issue 9): agreement ≥ 90 %, perplexity ≤ 1.05× float32.
"""
from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import torch

FIXTURE = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
TEXT = Path(__file__).parent / "data" / "quality.txt"


def logits_of(lm, ids: list[int]) -> torch.Tensor:
    lm.reset()
    return lm.forward(ids).float()


def perplexity(lm, ids: list[int]) -> float:
    logits = logits_of(lm, ids)[:-1]
    nll = torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:]))
    return math.exp(float(nll))


def reference_continuations(lm, prompts, tokens: int):
    from specx.api import prompt_ids
    from specx.drafters.ngram import NgramDrafter
    from specx.engine.loop import Generation
    from specx.policy.policy import make
    from specx.engine.types import Round, Sampling

    out = []
    for prompt in prompts:
        ids = prompt_ids(lm.tokenizer, prompt.text)
        gen = Generation(lm, NgramDrafter(), ids, k=8, max_tokens=tokens, sampling=Sampling(),
                         policy=make("fixed", 8))   # exact: equals plain greedy, only faster
        new = [t for e in gen if isinstance(e, Round) for t in e.token_ids]
        out.append((ids, new))
    return out


def agreement(lm, continuations) -> tuple[float, float]:
    same = total = 0
    prefixes = []
    for ids, new in continuations:
        if not new:
            continue
        predicted = logits_of(lm, ids + new)[len(ids) - 1:-1].argmax(-1).tolist()
        matches = [a == b for a, b in zip(predicted, new)]
        same, total = same + sum(matches), total + len(matches)
        prefixes.append(next((i for i, m in enumerate(matches) if not m), len(matches)))
    return same / max(total, 1), sum(prefixes) / max(len(prefixes), 1)


def main() -> None:
    from specx.bench.suite import bundled
    from specx.models import resolve as models
    from specx.models.resolve import load_lm, resolve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default=str(FIXTURE / "qwen2.5-coder-1.5b.gguf"))
    parser.add_argument("--weights", default="fp16,int8,int4")
    parser.add_argument("--prompts", type=int, default=10, help="bench prompts used, spread over categories")
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    by_cat: dict[str, list] = {}
    for p in bundled():
        by_cat.setdefault(p.category, []).append(p)
    picked = [ps[i] for i in range(10) for ps in by_cat.values() if i < len(ps)][:args.prompts]  # round robin
    source = resolve(args.target)
    t = time.perf_counter()
    reference = load_lm(source, "float32", "none")
    text_ids = reference.tokenizer(TEXT.read_text(encoding="utf-8"))["input_ids"]
    continuations = reference_continuations(reference, picked, args.tokens)
    base_ppl = perplexity(reference, text_ids)
    print(f"float32 reference: {len(picked)} prompts × {args.tokens} tokens, text {len(text_ids)} tokens, "
          f"perplexity {base_ppl:.3f} ({time.perf_counter() - t:.0f} s)", flush=True)
    print("| weights | greedy agreement (teacher-forced) | mean exact prefix | perplexity | ratio to float32 |")
    print("|---|---|---|---|---|")
    print(f"| float32 | 100.0% | {args.tokens:.1f} | {base_ppl:.3f} | 1.000 |", flush=True)
    models._LOADED.clear()
    del reference
    for weights in args.weights.split(","):
        lm = load_lm(source, "float32", weights)
        agree, prefix = agreement(lm, continuations)
        ppl = perplexity(lm, text_ids)
        print(f"| {weights} | {agree:.1%} | {prefix:.1f} | {ppl:.3f} | {ppl / base_ppl:.3f} |", flush=True)
        models._LOADED.clear()
        del lm


if __name__ == "__main__":
    main()
