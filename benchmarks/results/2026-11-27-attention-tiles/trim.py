"""RSS of a loaded Gemma-3-270M before and after gc and malloc_trim(0) (VmRSS, VmHWM from /proc/self/status)."""
import ctypes, resource, os, gc
def rss():
    with open("/proc/self/status") as f:
        d = dict(l.split(":", 1) for l in f)
    return d["VmRSS"].strip(), d["VmHWM"].strip()
import specx
p = specx.load(os.path.expanduser("~/.cache/specx-fixture-models/gemma3-270m.gguf"), "none")
print("after load", rss())
gc.collect(); print("after gc", rss())
ctypes.CDLL("libc.so.6").malloc_trim(0); print("after trim", rss())
