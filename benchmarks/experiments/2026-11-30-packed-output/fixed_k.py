"""The default pair (drafter+ngram, k=3) loaded with the target's output layer packed (with its layers) and left in
the file's layout (packing.packable refusing it), every bench prompt (2 per category) x 2, alternating, policy
fixed (or the one given): time in drafting and in verifying, per round, and the paired decoding speed ratio;
outputs checked equal. Usage: python fixed_k.py [POLICY]"""
import os
import statistics
import sys
import tempfile

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
sys.path.insert(0, str(os.path.join(os.path.dirname(__file__), "..", "..")))

from trees import run_one

import specx
from specx.bench import suite
from specx.cpu import packing

F = os.path.expanduser("~/.cache/specx-fixture-models/")
policy = sys.argv[1] if len(sys.argv) > 1 else "fixed"


def load():
    return specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram", k=3)


loaded = {"packed": load()}
packable = packing.packable
packing.packable = lambda w: packable(w) and w.rows != 151936   # the target's and the drafter's vocabulary
loaded["file"] = load()
packing.packable = packable
prompts = suite.calibration(suite.bundled(), 2)
totals = {k: [0.0, 0.0, 0.0, 0, 0] for k in loaded}
ratios = []
for rep in range(2):
    for i, p in enumerate(prompts):
        out = {}
        for name in (list(loaded) if (i + rep) % 2 == 0 else list(loaded)[::-1]):
            o = out[name] = run_one(loaded[name], p.text, 128, 0, policy)
            t = totals[name]
            t[0] += o["decode_s"]
            t[1] += sum(r[2] for r in o["rounds"])
            t[2] += sum(r[3] for r in o["rounds"])
            t[3] += len(o["rounds"])
            t[4] += sum(r[0] for r in o["rounds"])
        assert out["packed"]["tokens"] == out["file"]["tokens"]
        ratios.append(out["file"]["decode_s"] / out["packed"]["decode_s"])
for k, t in totals.items():
    print(f"{k}: decode {t[0]:.1f} s, drafting {t[1]:.1f} s, verifying {t[2]:.1f} s, {t[3]} rounds, {t[4]} drafted, "
          f"{t[2] / t[3] * 1e3:.1f} ms a verify")
s = sorted(ratios)
print(f"output packed / unpacked decoding speed: median {statistics.median(s):.3f} [{s[len(s) // 4]:.3f}-{s[3 * len(s) // 4]:.3f}] "
      f"(n={len(s)}); outputs equal")
