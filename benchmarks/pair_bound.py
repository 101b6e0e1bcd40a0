#!/usr/bin/env python3
"""Issue 35's default-pair bars against what the pair allows on this machine: speed bounds from measured costs.

    python benchmarks/pair_bound.py [--per-category 2] [--tokens 128] [--json OUT.json]

The pair as `specx run` loads it (the fixture Qwen2.5-Coder-1.5B Q4_K_M target, the fixture 0.5B drafter with
copies). For each bench prompt: the target's greedy answer (the truth, plain decoding on the target's own cache);
the drafter's greedy token and its probability at each answer position, teacher-forced along the truth (its
VocabTrim head given every id of the prompt and answer at once: optimistic); the n-gram drafter's copies as the
loop asks them. Costs, measured in this process after each answer and pooled: the drafter's one-token forward
and the target's forwards of n = 1..17 rows, over the target's one-token forward (medians of alternating rounds).

Bounds on decoding speed over plain decoding (plain: one one-token forward a token), each answer on its own:
- oracle: perfect foresight: each round drafts exactly the tokens the target accepts, copied (free) where a
  context match continues that far, else from the model (its cost a token), or drafts nothing; dynamic
  programming over the answer.
- confidence: the best a policy that sees only the drafter's probabilities reaches: a round copies where the
  n-gram drafter has a 3-token match or a resumed copy (as the hybrid does), up to c tokens; else the model drafts
  while its probability of its own token is at least t, up to k tokens. t, k and c are the best for each
  category in hindsight. After its first wrong token the model is taken to stop (optimistic: its probabilities
  off the target's path are not known). Drafting costs only forwards (no catching up, no Python: optimistic).
- fixed: a fixed k (t = 0: the model drafts all k tokens, right or wrong) and c, the best for the category.
- free drafter: `confidence` with the drafter's forward costing nothing (what the verify cost alone allows).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
MOST_ROWS = 17                              # verify forwards measured: 1..17 rows (copies of up to 16)
THRESHOLDS = [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98]
MODEL_K = range(1, 9)
COPY_K = (2, 4, 8, 16)
MIN_MATCH = 3                               # the hybrid copies from a match of this many tokens (hybrid.py)


def greedy_answer(lm, ids: list[int], n: int) -> list[int]:
    """Plain greedy decoding on the target's own cache: what every lossless run must output."""
    lm.reset()
    out, logits = [], lm.forward(ids, last_only=True)
    while len(out) < n:
        tok = int(logits[-1].argmax())
        if tok in lm.eos_ids:
            break
        out.append(tok)
        logits = lm.forward([tok], last_only=True)
    return out


def teacher_forced(dlm, seq: list[int], start: int) -> tuple[list[int], list[float]]:
    """The drafter's greedy token and its probability at each position start..len(seq)-1, given the truth."""
    import torch

    dlm.reset()
    if dlm.head is not None:
        dlm.head.restart(seq)
    logits = dlm.forward(seq[:-1])[start - 1:].float()
    probs = torch.softmax(logits, dim=-1)
    p, j = probs.max(dim=-1)
    ids = dlm.keep_ids
    top = (ids[j] if ids is not None else j).tolist()
    return top, p.tolist()


def time_forwards(target, dlm, seq: list[int], rounds: int, into: dict) -> None:
    """Append the target's n-row forward times (n = 1..MOST_ROWS) and the drafter's one-token time, after seq."""
    base = len(seq) - 1
    dlm.reset()
    if dlm.head is not None:
        dlm.head.restart(seq)
    dlm.forward(seq[:base], last_only=True)
    target.reset()
    target.forward(seq[:base], last_only=True)
    for _ in range(rounds):
        for n in range(1, MOST_ROWS + 1):
            target.crop(base - n)
            t = time.perf_counter()
            target.forward(seq[base - n:base], last_only=False)
            into.setdefault(n, []).append(time.perf_counter() - t)
            dlm.crop(base - 1)
            t = time.perf_counter()
            dlm.forward(seq[base - 1:base], last_only=True)
            into.setdefault("draft", []).append(time.perf_counter() - t)


def best_copy_runs(seq: list[int], start: int) -> list[int]:
    """At each answer position i (predicting seq[start + i]): the longest run of the truth that some earlier
    occurrence of the last MIN_MATCH tokens continues (the oracle's copies: any source, not only the latest)."""
    runs = []
    for p in range(start, len(seq)):
        key, best = seq[p - MIN_MATCH:p], 0
        for s in range(MIN_MATCH, p):
            if seq[s - MIN_MATCH:s] == key:
                r = 0
                while p + r < len(seq) and s + r < p + r and seq[s + r] == seq[p + r]:
                    r += 1
                best = max(best, r)
        runs.append(best)
    return runs


def oracle(hits: list[bool], copies: list[int], draft: float, verify: dict) -> float:
    n = len(hits)
    best = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = 1 + best[i + 1]
        for j in range(1, min(copies[i], MOST_ROWS - 1, n - 1 - i) + 1):
            best[i] = min(best[i], verify[j + 1] + best[i + j + 1])
        m = 0
        while m < MOST_ROWS - 1 and i + m < n - 1 and hits[i + m]:
            m += 1
            best[i] = min(best[i], m * draft + verify[m + 1] + best[i + m + 1])
    return n / best[0]


def policy(prompt: list[int], truth: list[int], top: list[int], prob: list[float], t: float, k: int, c: int,
           draft: float, verify: dict) -> float:
    """Decode speed over plain of a policy seeing only the drafter's probabilities (module docstring)."""
    from specx.drafters.ngram import NgramDrafter
    from specx.engine.draft import Ask

    ng = NgramDrafter()
    ng.prefill(prompt)
    n, i, cost = len(truth), 0, 0.0
    while i < n:
        seq = prompt + truth[:i]
        copy = ng.propose(seq, Ask(k=c))
        if copy.tokens and (ng.evidence == "resume" or ng.evidence >= MIN_MATCH):
            drafted = copy.tokens[:max(0, n - 1 - i)]
            spent = 0.0
        else:
            ng.start = ng.pointer = None
            drafted, spent = [], 0.0
            while len(drafted) < k and i + len(drafted) < n - 1 and prob[i + len(drafted)] >= t:
                drafted.append(top[i + len(drafted)])
                spent += draft
                if t > 0 and drafted[-1] != truth[i + len(drafted) - 1]:
                    break   # off the target's path its probabilities are unknown: taken to stop (optimistic)
        accepted = 0
        while accepted < len(drafted) and drafted[accepted] == truth[i + accepted]:
            accepted += 1
        cost += spent + verify[len(drafted) + 1]
        ng.commit(len(drafted), accepted)
        i += accepted + 1
    return n / cost


def best_policy(answers: list[dict], draft: float, verify: dict, thresholds) -> tuple[float, tuple]:
    """The (t, k, c) with the highest median speed over these answers, and that median."""
    best = (0.0, ())
    for t in thresholds:
        for k in MODEL_K:
            for c in COPY_K:
                s = statistics.median(policy(a["prompt"], a["truth"], a["top"], a["prob"], t, k, c, draft, verify)
                                      for a in answers)
                best = max(best, (s, (t, k, c)))
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--drafter", default=str(FIXTURES / "qwen2.5-coder-0.5b.gguf") + "+ngram")
    ap.add_argument("--per-category", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds after each answer")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    import specx
    from specx.bench import suite
    from specx.engine.prompt import prompt_ids
    from specx.state import machine

    pair = specx.load(a.target, a.drafter, notify=lambda s: print("  " + s))
    target, dlm = pair.target, pair.drafter.model.lm
    prompts = suite.calibration(suite.bundled(), a.per_category)
    print(f"{machine.identity()}; {len(prompts)} prompts, {a.tokens} tokens, greedy; drafter {dlm.name}")
    answers, times = [], {}
    for p in prompts:
        ids = prompt_ids(target.tokenizer, p.text)
        truth = greedy_answer(target, ids, a.tokens)
        seq = ids + truth
        top, prob = teacher_forced(dlm, seq, len(ids))
        hits = [x == y for x, y in zip(top, truth)]
        answers.append({"category": p.category, "prompt": ids, "truth": truth, "top": top, "prob": prob,
                        "hits": hits, "copies": best_copy_runs(seq, len(ids))})
        time_forwards(target, dlm, seq, a.rounds, times)
        print(f"  {p.category:14} {len(ids):4} prompt tokens, {len(truth)} answer tokens, drafter top-1 "
              f"agreement {sum(hits) / max(1, len(hits)):.3f}", flush=True)
    unit = statistics.median(times[1])
    verify = {n: statistics.median(times[n]) / unit for n in range(1, MOST_ROWS + 1)}
    draft = statistics.median(times["draft"]) / unit
    print(f"target one-token forward {unit * 1e3:.1f} ms; drafter one-token forward {draft:.3f} of it; "
          "verify of n rows over one: " + ", ".join(f"{n}: {verify[n]:.2f}" for n in (2, 3, 5, 9, 17)))
    rows = {}
    cats = sorted({x["category"] for x in answers}) + ["overall"]
    print(f"{'category':14} {'agree':>6} {'oracle':>7} {'confidence (t, k, c)':>26} {'fixed (k, c)':>20} "
          f"{'free drafter':>13}")
    for cat in cats:
        sel = [x for x in answers if cat in ("overall", x["category"])]
        agree = statistics.mean(h for x in sel for h in x["hits"])
        orc = statistics.median(oracle(x["hits"], x["copies"], draft, verify) for x in sel)
        conf, cp = best_policy(sel, draft, verify, THRESHOLDS)
        fixed, fp = best_policy(sel, draft, verify, [0.0])
        free, _ = best_policy(sel, 0.0, verify, THRESHOLDS)
        rows[cat] = {"agreement": agree, "oracle": orc, "confidence": conf, "confidence_at": cp, "fixed": fixed,
                     "fixed_at": fp, "free_drafter": free}
        print(f"{cat:14} {agree:6.3f} {orc:7.2f} {conf:8.2f} {str(cp):>17} {fixed:8.2f} {str(fp[1:]):>11} "
              f"{free:13.2f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"machine": machine.identity(), "unit_s": unit, "verify": verify,
                                            "draft": draft, "rows": rows, "answers": answers}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
