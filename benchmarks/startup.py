"""A run's startup: wall and CPU seconds of `specx run MODEL -d none -n 1 hi`, two checkouts alternating.

    python benchmarks/startup.py --old /work/main --new . --rounds 5 MODEL.gguf [MODEL.gguf ...]

Each checkout runs through PYTHONPATH with the same interpreter, in three states: warm (tokenizer cached,
state dir as it is), a fresh SPECX_HOME, and a fresh SPECX_HOME and SPECX_MODEL_CACHE (the tokenizer built
from the file). One warm-up run of each checkout first (page cache, tokenizer cache); then the rounds
alternate which checkout goes first. Prints medians and every sample, and whether the outputs are equal."""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

STATES = [("warm", False, False), ("fresh SPECX_HOME", True, False),
          ("fresh SPECX_HOME + model cache (tokenizer built)", True, True)]


def once(tree: str, model: str, fresh_home: bool, fresh_cache: bool) -> tuple[float, float, str]:
    """(wall s, user+sys s, stdout) of one run."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    if fresh_home:
        env["SPECX_HOME"] = tempfile.mkdtemp(prefix="specx-home-")
    if fresh_cache:
        env["SPECX_MODEL_CACHE"] = tempfile.mkdtemp(prefix="specx-cache-")
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from specx.cli import main; main()", "run", model,
                           "-d", "none", "-n", "1", "hi"], env=env, capture_output=True, text=True, cwd="/")
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    trees = {"old": args.old, "new": args.new}
    for model in args.models:
        for tree in trees.values():
            once(tree, model, False, False)
        for label, home, cache in STATES:
            samples = {name: [] for name in trees}
            for i in range(args.rounds):
                for name in (["old", "new"] if i % 2 == 0 else ["new", "old"]):
                    samples[name].append(once(trees[name], model, home, cache))
            med = {n: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v))
                   for n, v in samples.items()}
            same = len({s[2] for v in samples.values() for s in v}) == 1
            print(f"{os.path.basename(model)}, {label}: wall old {med['old'][0]:.2f} s, new {med['new'][0]:.2f} s; "
                  f"cpu old {med['old'][1]:.2f} s, new {med['new'][1]:.2f} s; same output: {same}", flush=True)
            for name, v in samples.items():
                print(f"  {name} wall {[round(s[0], 2) for s in v]} cpu {[round(s[1], 2) for s in v]}", flush=True)


if __name__ == "__main__":
    main()
