"""The startup parts in one process each, two checkouts alternating: the GGUF's first and second open
(the memory plan's, then the loader's) and the tokenizer from a warm cache, with torch and transformers
imported before the clock starts.

    python parts.py ROUNDS MODEL.gguf... (OLD and NEW: the checkouts, from the environment)"""
import json, os, statistics, subprocess, sys
OLD, NEW = os.environ.get("OLD", "/work/main"), os.environ.get("NEW", ".")
CODE = r'''
import json, os, sys, time
import torch, transformers, transformers.utils.logging
from specx.decoder.gguf_file import open_gguf
from specx.decoder.tokenizer import load_tokenizer
p = os.path.expanduser(sys.argv[1])
t0 = time.perf_counter(); a = open_gguf(p); t1 = time.perf_counter(); b = open_gguf(p); t2 = time.perf_counter()
tok = load_tokenizer(b); t3 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2]))
'''
res = {}
for i in range(int(sys.argv[1])):
    for model in sys.argv[2:]:
        for tree in ([OLD, NEW] if i % 2 == 0 else [NEW, OLD]):
            out = subprocess.run([sys.executable, "-c", CODE, model], env=dict(os.environ, PYTHONPATH=os.path.abspath(tree)), cwd="/",
                                 capture_output=True, text=True, check=True).stdout
            res.setdefault((model, tree), []).append(json.loads(out))
for (model, tree), rows in sorted(res.items()):
    med = [statistics.median(r[k] for r in rows) for k in range(3)]
    print(f"{os.path.basename(model)} {'old' if tree == OLD else 'new'}: first open {med[0]:.3f} s, second open {med[1]:.3f} s, cached tokenizer {med[2]:.3f} s")
