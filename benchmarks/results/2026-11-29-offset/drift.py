"""The default pair (0.5B drafter + copies, auto) over many answers in one process, 2 prompts of each bench
category per repeat, no other model: after each answer, its speed and what the cost model carried to the next holds
(the drafting step, verify times by size, each track's decayed accepted/rejected counts).

    python drift.py REPEATS"""
import os, sys, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-drift-"))
from pathlib import Path
import specx
from specx.bench import suite
F = Path("~/.cache/specx-fixture-models").expanduser()
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), 2)
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one
for rep in range(int(sys.argv[1])):
    for i, p in enumerate(prompts):
        s = run_one(pair, p.text, 128, 0, "auto")
        r = s["rounds"]; n = len(r)
        c = pair.costs.get(True)
        v = {k: round(c.verify_time(k) * 1e3, 1) if c.verify_time(k) else None for k in (1, 2, 4, 8)}
        tr = {k: f"{t.accepted:.1f}/{t.rejected:.1f}" for k, t in c.tracks.items()}
        print(f"{rep} {p.category:<13} {len(s['tokens']) / s['decode_s']:6.2f} tok/s drafted/round {sum(x[0] for x in r) / n:.2f} "
              f"acc/round {sum(x[1] for x in r) / n:.2f} | step {c.draft_step_s and round(c.draft_step_s * 1e3, 1)} ms verify {v} "
              f"tracks {tr}", flush=True)
