import os, sys, time, tempfile
t0 = time.perf_counter()
import specx
F = os.path.expanduser("~/.cache/specx-fixture-models/")
t1 = time.perf_counter()
pair = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
t2 = time.perf_counter()
print(f"{sys.argv[1]} load {t2-t1:.2f} s")
