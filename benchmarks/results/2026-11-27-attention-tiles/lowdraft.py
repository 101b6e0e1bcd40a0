"""Experiment (dropped): the drafter with its layers and trimmed output rows requantized (Q4_0 via gguf,
or Q2_K), against its own formats, default pair, bench prompts x 2 repeats, 128 tokens.  python lowdraft.py Q4_0+Q4_0 Q2_K+Q4_0"""
"""Experiment: the 0.5B drafter's layers (and its trimmed output rows) requantized to a lower-bit type."""
import sys, time, tomllib, statistics
from pathlib import Path
import numpy as np
import specx
from gguf import GGMLQuantizationType as G
from gguf.quants import quantize
from specx.cpu.qweight import QWeight, BLOCKS, dequantize
from specx.engine.types import Done, Round
from specx.cpu import lowbit
M = Path.home()/".cache/specx-fixture-models"
variant = sys.argv[1:] or ["Q4_0"]

def requant(w, kind):
    x = dequantize(w)
    if kind == "Q2_K":
        b = lowbit.quantize_q2_k(x)
    else:
        b = quantize(x, getattr(G, kind))
    return QWeight(BLOCKS[kind][0], np.ascontiguousarray(b).reshape(-1).view(np.uint8), w.rows, w.cols)

def lower(pair, kind, outkind):
    d = pair.drafter.model
    dec = d.lm.model
    W = dec.weights
    for l in W.layers:
        for f in ("qkv", "o", "gate_up", "down"):
            setattr(l, f, [requant(w, kind) if w.cols % 256 == 0 or kind != "Q2_K" else requant(w, "Q4_0") for w in getattr(l, f)])
    if outkind and d.head is not None:
        d.head.static = requant(d.head.static, outkind)
    print("drafter now", W.types(), file=sys.stderr)

pairs = {"own": specx.load(str(M/"qwen2.5-coder-1.5b.gguf"), f"{M}/qwen2.5-coder-0.5b.gguf+ngram")}
for v in variant:
    kind, _, outkind = v.partition("+")
    p = specx.load(str(M/"qwen2.5-coder-1.5b.gguf"), f"{M}/qwen2.5-coder-0.5b.gguf+ngram")
    t = time.perf_counter(); lower(p, kind, outkind or None); print(v, "requantized in", time.perf_counter()-t, file=sys.stderr)
    pairs[v] = p
prompts = tomllib.loads(Path("specx/bench/prompts.toml").read_text())["prompt"]
per = {}
def run(pair, text):
    toks = []
    for e in specx.stream(pair, text, max_tokens=128, draft_policy="auto"):
        if isinstance(e, Round): toks += e.token_ids
        if isinstance(e, Done): st = e.stats
    return toks, st
reps = 2
for rep in range(reps):
    for i, p in enumerate(prompts):
        names = list(pairs)
        names = names[(rep + i) % len(names):] + names[:(rep + i) % len(names)]
        out = {}
        for n in names:
            toks, st = run(pairs[n], p["text"])
            out[n] = toks
            per.setdefault((p["category"], i), {}).setdefault(n, []).append((st.decode_s, st.total_s, st.accepted, st.drafted, st.rounds, len(toks)))
        same = all(out[n] == out["own"] for n in out)
        print(rep, p["category"], {n: f"{per[(p['category'], i)][n][-1][0]:.2f}s acc {per[(p['category'], i)][n][-1][2]}/{per[(p['category'], i)][n][-1][3]}" for n in names}, "same" if same else "DIFF", flush=True)
print("| variant | category | decode ratio (median) | total ratio | accepted/drafted |")
for v in list(pairs)[1:]:
    for cat in sorted({c for c, _ in per} | {"overall"}):
        keys = [k for k in per if cat in ("overall", k[0])]
        r = [a[0] / b[0] for k in keys for a, b in zip(per[k][v], per[k]["own"])]
        rt = [a[1] / b[1] for k in keys for a, b in zip(per[k][v], per[k]["own"])]
        acc = sum(a[2] for k in keys for a in per[k][v]) / max(1, sum(a[3] for k in keys for a in per[k][v]))
        acc0 = sum(a[2] for k in keys for a in per[k]["own"]) / max(1, sum(a[3] for k in keys for a in per[k]["own"]))
        print(f"| {v} | {cat} | {statistics.median(r):.3f} | {statistics.median(rt):.3f} | {acc:.2f} (own {acc0:.2f}) |")
