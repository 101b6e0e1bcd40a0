"""Issue 36 item 2 probe: one-row cost and teacher-forced acceptance of skip sets and int8 activations on a
fixture GGUF (argument: its name), against the full model in float32 activations. The numbers in
benchmarks/results/2026-11-26-self/README.md came from this script."""
import time, sys, torch
from specx.decoder.lm import load
from specx.engine.prompt import prompt_ids
name = sys.argv[1]
lm = load(f"/root/.cache/specx-fixture-models/{name}.gguf")
L = lm.model.config.num_hidden_layers
ids = prompt_ids(lm.tokenizer, "Explain to a junior developer what `git rebase` does and when it is a bad idea to use it.", None, False)
seq = list(ids)
lm.forward(seq[:-1])
for _ in range(96):
    lo = lm.forward(seq[-1:]); seq.append(int(lo[-1].argmax()))
n = len(seq)
print("L", L, "len", n)
def timeit(skip, reps=20):
    ts=[]
    for _ in range(reps):
        lm.crop(n-1); t=time.perf_counter(); lm.model.forward(lm.cache, seq[-1:], skip=skip, last_only=True); ts.append(time.perf_counter()-t)
    ts.sort(); return ts[len(ts)//2]
def tf(skip, N=64):
    # teacher-forced over last N: cache crop to n-N-1, forward seq[n-N-1:n-1], compare argmax to seq[n-N:n]
    lm.crop(n-N-1)
    lo = lm.model.forward(lm.cache, seq[n-N-1:n-1], skip=skip)
    return float((lo.argmax(-1)==torch.tensor(seq[n-N:n])).float().mean())
full = timeit(())
print("full 1-row ms", full*1e3)
for r in [4]:
    for rows in [2,4,8]:
        lm.crop(n-1-rows); t=time.perf_counter(); lm.model.forward(lm.cache, seq[n-1-rows:n-1]); print(rows, "rows ms", (time.perf_counter()-t)*1e3)
mid = list(range(2, L-2))
for frac in [0.25, 0.375, 0.5]:
    m = int(frac*L)
    every = mid[::2][:m] if m <= len(mid[::2]) else mid[:m]
    tail = list(range(L-2-m, L-2))
    for nm, s in [("every-other", every), ("late-block", tail)]:
        print(f"{frac} {nm} skip={len(s)} time ratio {timeit(s)/full:.2f} tf-acc {tf(s):.2f}")
print("tf full", tf(()))
lm.model.mode = "q8"
q8 = timeit(())
print(f"q8 full: time ratio {q8/full:.2f} tf-acc {tf(()):.2f}")
for s in [mid[::2][:4], mid[::2][:7]]:
    print(f"q8 skip {len(s)}: time ratio {timeit(s)/full:.2f} tf-acc {tf(s):.2f}")
lm.model.mode = "f32"
# trimmed head cost share
import dataclasses
from specx.decoder import linear
w = lm.model.weights
h = torch.randn(1, lm.model.config.hidden_size)
t=time.perf_counter()
for _ in range(10): linear.matmul(h, [w.output], "f32")
print("head share", (time.perf_counter()-t)/10/full)
