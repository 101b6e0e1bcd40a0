import os, sys, gc
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) / 1024
import specx
from specx.decoder.gguf_file import open_gguf
from specx.decoder.tokenizer import load_tokenizer
F = os.path.expanduser("~/.cache/specx-fixture-models/")
r0 = rss()
g1 = open_gguf(F + "qwen2.5-coder-1.5b.gguf"); r1 = rss()
t1 = load_tokenizer(g1); r2 = rss()
g2 = open_gguf(F + "qwen2.5-coder-0.5b.gguf"); r3 = rss()
t2 = load_tokenizer(g2); gc.collect(); r4 = rss()
print(f"meta1 {r1-r0:.0f} tok1 {r2-r1:.0f} meta2 {r3-r2:.0f} tok2 {r4-r3:.0f} MiB")
