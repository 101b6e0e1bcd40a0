"""Per bench answer (2 per category, the second of two runs): copies that do not continue one accepted whole
("fresh") and those rejected at their first token, with their verify time; drafts that end at an end-of-answer
token, and drafted tokens past one (cumulative over the prompts). Usage: python fresh.py"""
import os, sys, time, collections
import specx
from specx.bench import suite
import specx.engine.loop as L
F = os.path.expanduser("~/.cache/specx-fixture-models/")
m = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
ps = suite.calibration(suite.bundled(), 2)
cls = [v for v in vars(L).values() if isinstance(v, type) and hasattr(v, "_verify_chain")][0]
orig = cls._propose
srcs = []
def prop(self, seq, k, model_k):
    d = orig(self, seq, k, model_k); srcs.append((getattr(d, "source", "?"), d.tokens, model_k)); return d
cls._propose = prop
eos = m.target.eos_ids
tot = collections.Counter()
for i in range(10):
    p = ps[i]
    for rep in range(2):
        rows = []; srcs.clear()
        for ev in specx.stream(m, p.text, max_tokens=128):
            if hasattr(ev, "drafted"): rows.append(ev)
    prev_whole = False
    for r, (s, toks, mk) in zip(rows, srcs):
        if s != "model" and r.drafted:
            key = "cont" if prev_whole else "fresh"
            tot[key] += 1; tot[key + "_a0"] += r.accepted == 0
            tot[key + "_waste_ms"] += (r.verify_s * 1e3) if r.accepted == 0 else 0
            tot[key + "_mk0"] += mk == 0
            prev_whole = r.accepted == r.drafted
        else:
            prev_whole = False
        tot["ends_eos"] += bool(toks) and toks[-1] in eos
        if any(t in eos for t in toks[:-1]):
            tot["past_eos"] += 1; tot["past_eos_tokens"] += len(toks) - 1 - min(j for j, t in enumerate(toks) if t in eos)
    print(i, p.category, dict(tot)); sys.stdout.flush()
