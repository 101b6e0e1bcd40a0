"""The default pair answering the two rewrite prompts 6 times in one process (as cpu_bars.py does, without llama.cpp beside it):
whether the auto policy drifts over a session (rounds, tokens drafted, times per answer). Usage: python drift.py (from the repo root)"""
import time, tomllib, sys
from pathlib import Path
sys.path.insert(0, "benchmarks")
import specx
F = Path("~/.cache/specx-fixture-models").expanduser()
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), str(F / "qwen2.5-coder-0.5b.gguf") + "+ngram")
ps = [p["text"] for p in tomllib.load(open("specx/bench/prompts.toml", "rb"))["prompt"] if p["category"] == "rewrite"][:2]
from cpu_bars import specx_runner
go = specx_runner(pair, "auto")
for rep in range(6):
    for i, p in enumerate(ps):
        tokens, total, st = go(p, 128)
        print(rep, i, f"{total:.2f}s rounds {st.rounds} drafted {st.drafted} acc {st.accepted} draft {st.draft_s:.2f} verify {st.verify_s:.2f} prefill {st.prefill_s:.2f} k {st.mean_drafted:.1f}", flush=True)
