"""The 1.5B's forwards of 1 and 5 tokens after a 200-token prompt on the AVX2 build (with or without VNNI), as an
AVX2-only CPU ran them before this change (the file's layout, q8 per 32 values) and after (Q4_0, Q4_K and Q6_K
packed, q8 per 256 into Q4_K and Q6_K), or the 0.5B drafter's (`drafter`: as a drafter loads it, its wider layers
re-encoded to Q4_0, 32768 output rows), both models in one process (quant's library swapped before each forward; attention and the other
element-wise kernels are this CPU's own builds either way), the C layer loop, alternating (order flipped each
repeat); medians, each way's 5 ÷ 1 ratio per repeat, and paired ratios after/before with quartiles.
Usage: python forwards.py vnni|novnni [REPEATS] [target|drafter]"""
import sys, time
from pathlib import Path
from specx.cpu import quant
from specx.decoder import lm as lean
drafter = len(sys.argv) > 3 and sys.argv[3] == "drafter"
name = "qwen2.5-coder-0.5b.gguf" if drafter else "qwen2.5-coder-1.5b.gguf"
path = str(Path("~/.cache/specx-fixture-models").expanduser() / name)
options = dict(mode="q4", draft_vocab=32768) if drafter else dict(mode="q8")
quant._default()   # this CPU's prefetching choices, which the AVX2 build takes too
st = quant._state
after = quant.load("avx2", vnni=sys.argv[1] == "vnni")
before = quant.opened(after.path)
object.__setattr__(before, "q8_groups", lambda: False)   # what the AVX2 builds ran before: per 32 values, so nothing packed
after.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
if st["prefetch_one"] is not None:
    after.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
after.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
print(after.describe())
libs = {"before": before, "after": after}
models = {}
for k in libs:
    st["lib"] = libs[k]
    models[k] = lean.load(path, **options)
    print(k, models[k].kernels, flush=True)
prompt = [(i * 7919) % 1000 + 100 for i in range(260)]
for k, m in models.items():
    st["lib"] = libs[k]
    m.forward(prompt[:200])
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 21
t = {(k, n): [] for k in libs for n in (1, 5)}
for r in range(reps):
    for k in (("before", "after") if r % 2 else ("after", "before")):
        st["lib"], m = libs[k], models[k]
        for n in (1, 5):
            m.crop(200)
            a = time.perf_counter(); m.forward(prompt[200 + r % 40:200 + r % 40 + n]); t[(k, n)].append(time.perf_counter() - a)
q = lambda v: sorted(v)[len(v) // 2]
for k in libs:
    rs = sorted(b / a for a, b in zip(t[(k, 1)], t[(k, 5)]))
    print(f"{k}: 1 tok {q(t[(k,1)])*1e3:.1f} ms, 5 tok {q(t[(k,5)])*1e3:.1f} ms, 5/1 per repeat median {q(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}]")
for n in (1, 5):
    rs = sorted(b / a for a, b in zip(t[("before", n)], t[("after", n)]))
    print(f"{n} tok after/before {q(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}]")
