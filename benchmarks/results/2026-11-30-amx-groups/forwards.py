"""A model as specx ran it on an AMX machine before this change (q8 per 32 values, the file's layout, AMX prompt
passes per 32: quant_amx.h) and after it (q8 with groups, packed tiles, AMX prompt passes on the tiles:
quant_amx_packed.h), both loaded by the current build in one process: forwards after a 100-token prompt of 1, 2, 5,
9 and 17 tokens and prompt passes of 128 and 300 tokens, alternating (order flipped each repeat); medians and the
paired ratio after / before with quartiles. Usage: python forwards.py [REPEATS] [MODEL.gguf] [--draft]
(--draft: as a drafter, `--draft-quant auto`: q4, VocabTrim head)"""
import statistics
import sys
import time
from pathlib import Path

import torch

from specx.cpu import packing, quant
from specx.decoder import lm as lean
from specx.decoder import resident

args = [a for a in sys.argv[1:] if not a.isdigit() and not a.startswith("--")]
draft = "--draft" in sys.argv
path = str(Path(args[0] if args else "~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
resident.wanted = lambda: True
groups = {"on": True}
grouped = quant.Library.q8_groups
quant.Library.q8_groups = lambda self: groups["on"] and grouped(self)
kw = dict(mode="q4", draft_vocab=32768) if draft else dict(mode="q8")
after = lean.load(path, **kw)
groups["on"], builds = False, packing.builds
packing.builds = lambda lib: False
before = lean.load(path, **kw)
packing.builds = builds
print("after: ", after.kernels[:500], "\nbefore:", before.kernels[:500], flush=True)
ids = torch.randint(100, 20000, (400,), generator=torch.Generator().manual_seed(0)).tolist()
res = {n: [] for n in (1, 2, 5, 9, 17, "prompt 128", "prompt 300")}
reps = int(next((a for a in sys.argv[1:] if a.isdigit()), 9))
for rep in range(reps):
    for n, times in res.items():
        pair = {}
        order = (("after", after), ("before", before))
        for name, m in (order if rep % 2 else order[::-1]):
            groups["on"] = name == "after"
            if isinstance(n, str):
                m.crop(0)
                s = time.perf_counter()
                m.forward(ids[:int(n.split()[1])], last_only=True)
            else:
                m.crop(100)
                s = time.perf_counter()
                m.forward(ids[100:100 + n])
            pair[name] = time.perf_counter() - s
        times.append(pair)
for n, times in res.items():
    b = statistics.median(t["before"] for t in times) * 1e3
    a = statistics.median(t["after"] for t in times) * 1e3
    r = sorted(t["after"] / t["before"] for t in times)
    q = statistics.quantiles(r, n=4)
    print(f"{str(n):>10}: before {b:7.1f} ms  after {a:7.1f} ms  after/before {statistics.median(r):.3f} "
          f"[{q[0]:.3f}-{q[2]:.3f}]", flush=True)
