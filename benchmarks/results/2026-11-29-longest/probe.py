"""Each drafting round's (policy, drafted, accepted, made, draft ms, catching-up ms, source) on the default pair,
for the bench prompts of one category under `auto` and `fixed`: how many tokens the model drafter made against
how many the target verified.

    python benchmarks/results/2026-11-29-longest/probe.py [CATEGORY]
"""
import os
import sys
import tempfile
import time

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import specx  # noqa: E402
from specx.bench import suite  # noqa: E402
from specx.policy import auto, base  # noqa: E402

F = os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")) + "/"
NAMES = ("drafted", "accepted", "draft_s", "verify_s", "source", "made", "confidences", "read_s")
log = []


def logged(update):
    def wrapper(self, *args, **kwargs):
        d = {**dict(zip(NAMES, args)), **kwargs}
        log.append((type(self).__name__, d["drafted"], d["accepted"], d.get("made"),
                    round(d.get("draft_s", 0) * 1e3, 1), round(d.get("read_s", 0) * 1e3, 1), d.get("source", "model")))
        return update(self, *args, **kwargs)
    return wrapper


auto.Auto.update = logged(auto.Auto.update)
base.Policy.update = logged(base.Policy.update)
category = sys.argv[1] if len(sys.argv) > 1 else "math"
pair = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
for policy in ("auto", "fixed"):
    for p in suite.calibration(suite.bundled(), 2):
        if p.category != category:
            continue
        log.clear()
        t = time.perf_counter()
        specx.generate(pair, p.text, max_tokens=128, draft_policy=policy, tree=0)
        print(policy, p.category, f"{time.perf_counter() - t:.2f}s")
        for r in log:
            print("  ", r)
