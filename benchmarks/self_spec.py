"""Issue 36 item 2's bars: self-speculation against plain decoding, paired, alternating, on the bench prompts.

  python benchmarks/self_spec.py [--repeats 5] [--max-tokens 128] [--short] [--json OUT.json]

Rows: the fixture smollm2 with its default (`--drafter auto`: self + copies, as `specx run smollm2` takes
it) and the fixture Qwen2.5-Coder-1.5B with `--drafter self`, each against plain decoding (`--drafter none`)
on the same loaded weights, greedy, the auto draft policy; per prompt the two runs alternate in order from
repeat to repeat. Reported per category and overall: the median of the per-prompt decode-speed ratios
(bars: >= 1.3x overall, >= 1.0x per category), acceptance, and the perfect-foresight bound: the speedup a
choice of shape (among those the search scored) and k made knowing which drafted tokens the target accepts
would reach, at each shape's measured one-token cost and the full model's measured forwards of 2..17 rows
(verify_costs), acceptance read teacher-forced from the target's own answer in chunks of 8 tokens.
Before timing, the shape is searched to the end on the warm-up answer (as `specx tune --drafter self`
does; `--searching`: time the answers while the search runs, as a first use would).
`--short`: one prompt per category, one repeat, 32 tokens (a check that it runs)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", Path.home() / ".cache" / "specx-fixture-models"))
ROWS = (("smollm2-135m", "auto"), ("qwen2.5-coder-1.5b", "self"))
CHUNK = 8          # teacher-forced rows per forward for the bound (a draft's own tokens see the shape's slots)
MAX_SHAPES = 8     # the bound considers the shapes the search scored best (by expected speedup)


def run(pair, prompt: str, max_tokens: int):
    from specx import api
    from specx.engine.types import Done, Round
    from specx.options import RunOptions

    tokens, stats = [], None
    for e in api.stream(pair, prompt, RunOptions(max_tokens=max_tokens)):
        if isinstance(e, Round):
            tokens += e.token_ids
        elif isinstance(e, Done):
            stats = e.stats
    return tokens, stats


def self_drafter(pair):
    return getattr(pair.drafter, "model", pair.drafter)


def one_step_costs(drafter, seq: list[int], shapes) -> dict:
    """Each shape's one-token forward time over the full model's, medians of 5 alternating."""
    from specx.drafters.skipsearch import Shape

    full, lm, base = Shape((), drafter.lm.model.mode), drafter.lm, len(seq) - 1
    times = {s: [] for s in [full, *shapes]}
    for _ in range(5):
        for s in times:
            lm.crop(base)
            t = time.perf_counter()
            drafter._forward(seq[-1:], s)
            times[s].append(time.perf_counter() - t)
    lm.crop(base)
    unit = statistics.median(times[full])
    return {s: statistics.median(v) / unit for s, v in times.items() if s != full}


def verify_costs(drafter, seq: list[int], most: int) -> dict:
    """The full model's forward of n rows (n = 1..most) over its 1-row forward, after seq[:-1]: medians of 3
    rounds, the row counts alternating within each."""
    from specx.drafters.skipsearch import Shape

    full, lm, base = Shape((), drafter.lm.model.mode), drafter.lm, len(seq) - 1
    times = {n: [] for n in range(1, most + 1)}
    for _ in range(3):
        for n in times:
            lm.crop(base - n + 1)
            t = time.perf_counter()
            drafter._forward(seq[base - n + 1:base + 1], full)
            times[n].append(time.perf_counter() - t)
    lm.crop(base)
    unit = statistics.median(times[1])
    return {n: statistics.median(v) / unit for n, v in times.items()}


def bound(drafter, prompt_ids: list[int], answer: list[int], max_k: int = 16) -> tuple[float, dict]:
    """(perfect-foresight speedup over the answer, {shape: its one-token cost}), by dynamic programming:
    at each position, plain (cost 1) or a draft of the next k tokens in shape s, all accepted (k below the
    run of s's teacher-forced matches there), costing k·cost(s) plus a verify of k + 1 rows as measured on this
    model after the answer (verify_costs), not the search's straight line through one slope."""
    from specx.drafters.skipsearch import expected_speedup

    s = drafter.search
    shapes = sorted(s.scores, key=lambda x: -expected_speedup(*s.scores[x], slope=s.slope)[0])[:MAX_SHAPES] or [s.shape]
    seq = prompt_ids + answer
    lm = drafter.lm
    lm.reset()
    lm.forward(seq[:len(prompt_ids) - 1], last_only=True)
    hits = {x: [] for x in shapes}
    for end in range(len(prompt_ids), len(seq), CHUNK):   # rows predicting answer tokens, CHUNK at a time
        stop = min(end + CHUNK, len(seq))
        lm.forward(seq[lm.cached:stop - 1], last_only=True)   # the full model's slots up to there
        for x in shapes:
            hits[x] += drafter.matches(seq[:stop], x, stop - end)[0].tolist()
    costs = one_step_costs(drafter, seq, shapes)
    verify = verify_costs(drafter, seq, max_k + 1)
    n = len(answer)
    best = [0.0] * (n + 1)   # best[i]: the least cost of the answer's tokens from i on, in plain steps
    for i in range(n - 1, -1, -1):
        best[i] = 1 + best[i + 1]
        for x in shapes:
            k = 0
            while k < max_k and i + k < n - 1 and hits[x][i + k]:
                k += 1
                best[i] = min(best[i], k * costs[x] + verify[k + 1] + best[i + k + 1])
    return n / best[0] if best[0] else 1.0, costs


def main() -> None:
    from specx import load
    from specx.api import prompt_ids
    from specx.bench import suite
    from specx.drafters.self import search_fully
    from specx.state import machine

    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--only", help="one row: smollm2-135m or qwen2.5-coder-1.5b")
    ap.add_argument("--searching", action="store_true",
                    help="time answers while the search still runs (default: search to the end on the warm-up)")
    ap.add_argument("--per-category", type=int, default=0, help="the first N prompts of each category (0: all)")
    ap.add_argument("--draft-vocab", type=int, default=None,
                    help="the drafts' output rows (VocabTrim; 0: all; default: specx's default)")
    ap.add_argument("--json")
    a = ap.parse_args()
    prompts = suite.bundled()
    if a.per_category:
        prompts = suite.calibration(prompts, a.per_category)
    if a.short:
        prompts = suite.calibration(prompts)
        a.repeats, a.max_tokens = 1, 32
    print(f"{machine.identity()}; {len(prompts)} prompts, {a.repeats} repeats, {a.max_tokens} tokens, greedy")
    out = {}
    for name, drafter in ROWS:
        if a.only and a.only != name:
            continue
        path = str(FIXTURES / f"{name}.gguf")
        vocab = {} if a.draft_vocab is None else {"draft_vocab": a.draft_vocab}
        plain, spec = load(path, "none"), load(path, drafter, notify=lambda s: print("  " + s), **vocab)
        d = self_drafter(spec)
        run(spec, prompts[0].text, a.max_tokens)   # warm-up: the search's first answer
        warm = prompt_ids(spec.target.tokenizer, prompts[0].text) + run(plain, prompts[0].text, a.max_tokens)[0]
        if not a.searching:   # as after `specx tune --drafter self`: the timed answers draft with a settled shape
            print("  " + search_fully(d, warm))
        rows = []
        for r in range(a.repeats):
            for i, p in enumerate(prompts):
                order = [(plain, "plain"), (spec, "spec")][:: 1 if (r + i) % 2 == 0 else -1]
                got = {label: run(pair, p.text, a.max_tokens) for pair, label in order}
                same = got["plain"][0] == got["spec"][0]
                rows.append({"category": p.category, "prompt": p.name, "repeat": r, "same": same,
                             "plain": got["plain"][1].decode_tok_s, "spec": got["spec"][1].decode_tok_s,
                             "accept": got["spec"][1].acceptance_rate, "drafted": got["spec"][1].drafted,
                             "rounds": got["spec"][1].rounds})
        bounds = {}
        for p in prompts:
            ids = prompt_ids(spec.target.tokenizer, p.text)
            answer = run(plain, p.text, a.max_tokens)[0]
            bounds[p.name] = bound(d, ids, answer)[0]
        out[name] = report(name, drafter, rows, bounds, d)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")


def report(name: str, drafter: str, rows: list[dict], bounds: dict, d) -> dict:
    print(f"\n{name} --drafter {drafter} vs none; shape: {d.search.explain()}")
    print(f"{'category':15} {'speedup':>8} {'bound':>6} {'accept':>7} {'drafted/round':>14} {'same':>5}")
    summary = {}
    for cat in list(dict.fromkeys(r["category"] for r in rows)) + ["overall"]:
        sel = [r for r in rows if cat in ("overall", r["category"])]
        ratio = statistics.median(r["spec"] / r["plain"] for r in sel)
        b = statistics.median(bounds[r["prompt"]] for r in sel)
        acc = statistics.mean(r["accept"] for r in sel)
        per = statistics.mean(r["drafted"] / max(r["rounds"], 1) for r in sel)
        same = all(r["same"] for r in sel)
        print(f"{cat:15} {ratio:7.2f}x {b:5.2f}x {acc:7.2f} {per:14.2f} {str(same):>5}")
        summary[cat] = {"speedup": ratio, "bound": b, "acceptance": acc, "drafted_per_round": per, "same": same}
    return {"rows": rows, "bounds": bounds, "summary": summary, "shape": d.search.explain()}


if __name__ == "__main__":
    main()
