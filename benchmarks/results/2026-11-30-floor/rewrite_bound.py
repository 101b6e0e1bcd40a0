#!/usr/bin/env python3
"""Issue 35's rewrite bar (default >= 2.5x llama.cpp end to end) against perfect foresight on this machine.

    python benchmarks/results/2026-11-30-floor/rewrite_bound.py bound.json rewrite.json

bound.json: `benchmarks/pair_bound.py --per-category 2 --json` (each answer's truth, the drafter's teacher-forced
hits, the copies, and the pair's costs measured in that process); rewrite.json: `benchmarks/cpu_bars.py
--categories rewrite --per-category 2 --configs llamacpp,none,default --json` (the same two prompts, end to end).
For each rewrite prompt: pair_bound's oracle (each round drafts exactly the tokens the target accepts, copies free,
the model's tokens at its measured cost, verify at the measured n-row costs) as a speed-up of specx's plain
decoding; then llama.cpp's end-to-end time over specx's prompt pass plus its plain decoding divided by that
speed-up plus the rest of its run: the most a lossless pair of these two models reaches end to end here. Also with
the drafter free, and with the drafter free and every verify costing one forward, to show what binds."""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pair_bound import oracle


def main(bound_path: str, bars_path: str) -> int:
    b = json.loads(Path(bound_path).read_text())
    bars = json.loads(Path(bars_path).read_text())["samples"]
    verify = {int(n): v for n, v in b["verify"].items()}
    flat = {n: 1.0 for n in verify}
    answers = [a for a in b["answers"] if a["category"] == "rewrite"]
    print(f"{b['machine']}; target one-token forward {b['unit_s'] * 1e3:.1f} ms, drafter step {b['draft']:.3f} of "
          f"it; verify of 5 rows {verify[5]:.2f}, 9 rows {verify[9]:.2f}")
    print("| prompt | bound | x specx plain decoding | end to end ÷ llama.cpp | measured default ÷ llama.cpp |")
    print("|---|---|---|---|---|")
    ids = sorted({s["prompt"] for s in bars if s["category"] == "rewrite"})   # the bars' own prompt numbers
    for i, a in enumerate(answers):
        def median(config, key, i=ids[i]):
            return statistics.median(s[key] for s in bars if s["prompt"] == i and s["config"] == config)

        llama = median("llamacpp", "total_s")
        first, decode, total = (median("none", k) for k in ("first_s", "decode_s", "total_s"))
        rest = total - first - decode
        default = llama / median("default", "total_s")
        for name, draft, cost in (("oracle", b["draft"], verify), ("oracle, drafter free", 0.0, verify),
                                  ("oracle, drafter free, verify flat", 0.0, flat)):
            x = oracle(a["hits"], a["copies"], draft, cost)
            print(f"| {i} ({len(a['truth'])} tokens) | {name} | {x:.2f} | {llama / (first + decode / x + rest):.2f} "
                  f"| {default:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
