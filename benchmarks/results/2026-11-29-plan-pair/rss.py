import os, sys, tempfile, resource
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import specx
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) / 1024
F = os.path.expanduser("~/.cache/specx-fixture-models/")
base = rss()
pair = specx.load(F + "qwen2.5-coder-1.5b.gguf", sys.argv[1] if sys.argv[1] == "none" else F + sys.argv[1])
loaded = rss()
specx.generate(pair, "Write a haiku about caches.", max_tokens=32)
after = rss()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(sys.argv[1], f"base {base:.0f} loaded {loaded:.0f} after {after:.0f} peak {peak:.0f} MiB")
