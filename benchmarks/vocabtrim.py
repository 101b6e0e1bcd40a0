#!/usr/bin/env python3
"""VocabTrim's two numbers: how many of a target's greedy tokens a trimmed drafter head can propose, and what a
draft step costs with it.

    python benchmarks/vocabtrim.py TARGET.gguf [--tokens 128] [--keep 16384,32768] [--step DRAFTER.gguf]

Coverage: the target (lean decoder, int8 activations) answers every bundled bench prompt greedily; for each kept
size N, the share of answer tokens that are among the first N ids alone, and among the first N ids plus the ids
of the context before them (prompt and answer so far: what vocabtrim.DraftHead adds). Step: a one-token forward
of the drafter after 100 cached tokens with every output row and with each N, alternating, median of 30.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def answers(path: str, tokens: int) -> list[tuple[list[int], list[int]]]:
    from specx.bench import suite
    from specx.decoder.lm import load
    from specx.engine.prompt import prompt_ids

    lm, out = load(path, mode="q8"), []
    for p in suite.bundled():
        lm.reset()
        ids = prompt_ids(lm.tokenizer, p.text)
        logits, gen = lm.forward(ids, last_only=True), []
        while len(gen) < tokens and (not gen or gen[-1] not in lm.eos):
            gen.append(int(logits[-1].argmax()))
            logits = lm.forward(gen[-1:], last_only=True)
        out.append((ids, gen))
    return out


def coverage(runs, keep: int) -> tuple[float, float]:
    alone = with_context = total = 0
    for prompt, answer in runs:
        seen = set(prompt)
        for t in answer:
            total += 1
            alone += t < keep
            with_context += t < keep or t in seen
            seen.add(t)
    return alone / total, with_context / total


def step_ms(path: str, keeps: list[int]) -> dict[int, float]:
    from specx.decoder.lm import load

    lms = {k: load(path, mode="q8", draft_vocab=k) for k in [0, *keeps]}
    times = {k: [] for k in lms}
    for lm in lms.values():
        lm.forward(list(range(100, 200)), last_only=True)
    for _ in range(30):
        for k, lm in lms.items():
            lm.crop(100)
            t = time.perf_counter()
            lm.forward([5], last_only=True)
            times[k].append(time.perf_counter() - t)
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def main() -> None:
    from specx.state import machine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--keep", default="8192,16384,32768,65536")
    ap.add_argument("--step", help="a drafter GGUF to time (default: the target)")
    a = ap.parse_args()
    keeps = [int(k) for k in a.keep.split(",")]
    print(f"{machine.identity()}; {Path(a.target).name}")
    runs = answers(a.target, a.tokens)
    print(f"\n{sum(len(r[1]) for r in runs)} greedy tokens over {len(runs)} prompts")
    print("| kept ids | first ids alone | + the context's |\n|---|---|---|")
    for k in keeps:
        alone, both = coverage(runs, k)
        print(f"| {k:,} | {alone:.1%} | {both:.1%} |")
    steps = step_ms(a.step or a.target, keeps)
    print(f"\none-token forward of {Path(a.step or a.target).name} after 100 tokens (median of 30, ms): "
          + ", ".join(f"{'all rows' if k == 0 else f'{k:,}'} {v:.2f}" for k, v in steps.items()))


if __name__ == "__main__":
    main()
