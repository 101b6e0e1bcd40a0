"""Seconds until a 1-token run's model is ready (api.prepare returned; the forward left out: on the shared
machine its time is bimodal), two checkouts alternating, warm and with a fresh SPECX_HOME and model cache.

    OLD=/work/main NEW=. python ready_bench.py ROUNDS MODEL.gguf..."""
import os, statistics, subprocess, sys, tempfile, time
PY = sys.executable
TREES = {"old": os.path.abspath(os.environ.get("OLD", "/work/main")), "new": os.path.abspath(os.environ.get("NEW", "."))}
def once(tree, model, fresh):
    env = dict(os.environ, PYTHONPATH=TREES[tree])
    if fresh:
        env["SPECX_HOME"] = tempfile.mkdtemp(); env["SPECX_MODEL_CACHE"] = tempfile.mkdtemp()
    t = time.perf_counter()
    r = subprocess.run([PY, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ready.py"), "run", model, "-d", "none", "-n", "1", "hi"], env=env, cwd="/",
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    ready = [float(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("READY")][0]
    return ready
for model in sys.argv[2:]:
    for fresh in (False, True):
        s = {"old": [], "new": []}
        for i in range(int(sys.argv[1])):
            for tree in (["old", "new"] if i % 2 == 0 else ["new", "old"]):
                s[tree].append(once(tree, model, fresh))
        print(f"{os.path.basename(model)} {'fresh home + model cache' if fresh else 'warm'}: ready after old "
              f"{statistics.median(s['old']):.2f} s {s['old']}, new {statistics.median(s['new']):.2f} s {s['new']}", flush=True)
