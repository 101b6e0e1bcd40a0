"""Experiment (not adopted): auto's k cap (policy.AUTO_K_MAX) 16 against 32 on the default pair,
rewrite and code prompts, 3 alternating repeats.  python kmax.py rewrite,code"""
import sys, time, tomllib, statistics
from pathlib import Path
import specx
from specx.policy import policy as P
from specx.engine.types import Done, Round
M = Path.home()/".cache/specx-fixture-models"
pairs = {}
for kmax in (16, 32):
    P.AUTO_K_MAX = kmax
    pairs[kmax] = specx.load(str(M/"qwen2.5-coder-1.5b.gguf"), f"{M}/qwen2.5-coder-0.5b.gguf+ngram")
    print(kmax, pairs[kmax].draft_tokens if hasattr(pairs[kmax], "draft_tokens") else "", file=sys.stderr)
cats = sys.argv[1].split(",")
prompts = [p for p in tomllib.loads(Path("specx/bench/prompts.toml").read_text())["prompt"] if p["category"] in cats]
res = {}
for rep in range(3):
    for i, p in enumerate(prompts):
        order = (16, 32) if (rep + i) % 2 == 0 else (32, 16)
        out = {}
        for k in order:
            toks = []
            t = time.perf_counter()
            for e in specx.stream(pairs[k], p["text"], max_tokens=128, draft_policy="auto"):
                if isinstance(e, Round): toks += e.token_ids
                if isinstance(e, Done): st = e.stats
            total = time.perf_counter() - t
            out[k] = toks
            res.setdefault((i, k), []).append((total, st.decode_s, st.rounds, st.mean_drafted))
        print(rep, p["category"], i, {k: f"{res[(i,k)][-1][0]:.2f}s/{res[(i,k)][-1][2]}r/{res[(i,k)][-1][3]:.1f}" for k in order}, "same" if out[16] == out[32] else "DIFF", flush=True)
for cat in cats:
    r = [a[0] / b[0] for i, p in enumerate(prompts) if p["category"] == cat for a, b in zip(res[(i, 32)], res[(i, 16)])]
    d = [a[1] / b[1] for i, p in enumerate(prompts) if p["category"] == cat for a, b in zip(res[(i, 32)], res[(i, 16)])]
    print(cat, "k32/k16 total", f"{statistics.median(r):.3f}", "decode", f"{statistics.median(d):.3f}")
