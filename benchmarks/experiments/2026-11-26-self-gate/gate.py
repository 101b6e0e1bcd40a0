"""Offline: does the target's confidence (or the draft's) predict a self-draft's acceptance? Qwen 1.5B, trimmed head."""
import json, sys, time, torch
from pathlib import Path
from specx import load
from specx.api import prompt_ids
from specx.bench import suite
from specx.drafters.self import kept
sys.path.insert(0, "/work/main/benchmarks")
from self_spec import run, self_drafter
path = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
plain, spec = load(path, "none"), load(path, "self", notify=lambda s: print("  " + s))
d = self_drafter(spec)
shape = d.search.shape
print("shape", shape, d.search.explain())
prompts = suite.calibration(suite.bundled(), 2)
CH = 8
out = []
for p in prompts:
    ids = prompt_ids(spec.target.tokenizer, p.text)
    answer = run(plain, p.text, 128)[0]
    seq = ids + answer
    lm = d.lm
    lm.reset()
    lm.forward(seq[:len(ids) - 1], last_only=True)
    hits, dconf, tconf = [], [], []
    for end in range(len(ids), len(seq), CH):
        stop = min(end + CH, len(seq))
        full = lm.forward(seq[lm.cached:stop - 1], last_only=False)   # target logits for rows predicting seq[.. stop-1]
        # target's prob of its own token at each of the last (stop-end) rows
        tl = full[-(stop - end):]
        tconf += torch.softmax(tl.float(), -1).max(-1).values.tolist()
        base = stop - 1
        start = end - 1
        with kept(lm.cache, start, base):
            lm.cache.crop(start)
            logits = d._forward(seq[start:base], shape, last_only=False)
        pr = torch.softmax(logits.float(), -1)
        conf, idx = pr.max(-1)
        guess = d.head.ids[idx] if d.head is not None else idx
        hits += (guess == torch.tensor(seq[start + 1:base + 1])).tolist()
        dconf += conf.tolist()
    out.append({"category": p.category, "name": p.name, "hits": hits, "dconf": dconf, "tconf": tconf, "n": len(answer)})
    print(p.category, len(answer), sum(hits) / len(hits))
json.dump({"shape": str(shape), "cost": d.search.cost, "rows": out}, open("gate.json", "w")  # gzip -9 it beside this script)
