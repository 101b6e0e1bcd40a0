"""A verify size whose time was taken while the machine was busy: before and after stale pricing.

Runs the held-out code prompt (fixture Qwen pair, float32, `0.5b+ngram` auto, 48 tokens) after
planting a carried 6-token forward time of 412 ms (a fresh 5-token one takes ~190 ms), as a saved
measurement from a busier moment would. `old`: costmodel.STALE_AGE disabled (a time is trusted until
its size is timed again); `new`: as shipped. Prints each answer's time and its rounds
(drafted/accepted). Usage: python stale_demo.py HELDOUT.toml [REPEATS]"""
import os, sys, time, tomllib
from specx.runtime import api, costmodel
from specx.runtime.policy import DraftPolicy

M = os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models"))
prompt = next(p["text"] for p in tomllib.load(open(sys.argv[1], "rb"))["prompt"] if p["category"] == "code")
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 2
pair = api.prepare(f"{M}/qwen2.5-coder-1.5b.gguf", f"{M}/qwen2.5-coder-0.5b.gguf+ngram", quant="none")
rounds, update = [], DraftPolicy.update
def logged(self, drafted, accepted, *a, **kw):
    rounds.append(f"{drafted}/{accepted}")
    return update(self, drafted, accepted, *a, **kw)
DraftPolicy.update = logged
shipped = costmodel.STALE_AGE
for _ in api.stream(pair, prompt, max_tokens=48): pass          # measures the pair's costs
for r in range(repeats):
    for variant in (("old", "new") if r % 2 == 0 else ("new", "old")):
        costmodel.STALE_AGE = 10 ** 9 if variant == "old" else shipped
        pair.costs[True].verify_s[6] = 0.412                   # the planted busy-moment time
        rounds.clear(); t = time.perf_counter()
        for _ in api.stream(pair, prompt, max_tokens=48): pass
        print(f"{variant} rep{r} {time.perf_counter() - t:.2f} s  rounds {' '.join(rounds)}", flush=True)
