"""The default pair (and plain decoding) with quant.c's DECODED on and off, alternating per answer in one
process: the prompt pass (target and drafter), the first token and the whole answer, and the outputs compared.

    python benchmarks/results/2026-11-29-decoded/ab.py [REPEATS] [PER_CATEGORY] [--json out.json]
"""
import json
import os
import statistics as st
import sys
import tempfile

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import specx  # noqa: E402
from specx.api import RunOptions, stream  # noqa: E402
from specx.bench import suite  # noqa: E402
from specx.cpu import quant  # noqa: E402

F = os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")) + "/"
args = [a for a in sys.argv[1:] if not a.startswith("--")]
repeats = int(args[0]) if args else 3
per = int(args[1]) if len(args) > 1 else 2
out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
DRAFTERS = {"plain": "none", "default": F + "qwen2.5-coder-0.5b.gguf+ngram"}
# a pair per setup and side: an answer keeps only the prefix its prompt shares with the pair's last one (the
# system prompt), as in cpu_bars.py, never the whole prompt the other side just read
setups = {name: {on: specx.load(F + "qwen2.5-coder-1.5b.gguf", d) for on in (False, True)} for name, d in DRAFTERS.items()}
lib = quant._library()
print(lib.describe(), flush=True)
rows, texts = [], {}
prompts = list(suite.calibration(suite.bundled(), per))
for rep in range(repeats):
    for i, p in enumerate(prompts):
        for name, sides in setups.items():
            for on in ((True, False) if (rep + i) % 2 else (False, True)):
                pair = sides[on]
                lib.decode_once(on)
                text = ""
                for ev in stream(pair, p.text, RunOptions(max_tokens=128)):
                    text += getattr(ev, "text", "")
                s = ev.stats
                texts.setdefault((name, i), set()).add(text)
                row = dict(rep=rep, prompt=i, category=p.category, setup=name, decoded=on, prompt_tokens=s.prompt_tokens,
                           reused=s.reused, prefill_s=s.prefill_s, first_s=s.first_token_s, total_s=s.total_s)
                rows.append(row)
                print(f"{rep} {p.category:13s} {name:8s} decoded={int(on)} prompt {s.prompt_tokens - s.reused:3d} read "
                      f"prefill {s.prefill_s:.3f} first {s.first_token_s:.3f} total {s.total_s:.3f}", flush=True)
lib.decode_once(True)


def ratio(setup, key, category=None):
    pairs = {}
    for r in rows:
        if r["setup"] == setup and (category is None or r["category"] == category):
            pairs.setdefault((r["rep"], r["prompt"]), {})[r["decoded"]] = r[key]
    v = sorted(d[False] / d[True] for d in pairs.values() if len(d) == 2)
    return f"{st.median(v):.3f} [{v[len(v) // 10]:.3f}-{v[-1 - len(v) // 10]:.3f}]"


print("\noff / on, median [10-90%] over paired answers")
for setup in setups:
    for key in ("prefill_s", "first_s", "total_s"):
        print(f"{setup:8s} {key:10s} all {ratio(setup, key)}  " +
              "  ".join(f"{c} {ratio(setup, key, c).split()[0]}" for c in sorted({p.category for p in prompts})))
print("outputs equal on and off:", all(len(t) == 1 for t in texts.values()))
if out:
    json.dump(rows, open(out, "w"))
