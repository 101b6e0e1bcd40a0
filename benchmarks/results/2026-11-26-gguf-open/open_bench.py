"""Open time and tokenizer time per fixture GGUF: specx's reader and tokenizer against gguf.GGUFReader
and transformers' AutoTokenizer(gguf_file=...). Alternating repeats in one process, medians; then the
first and a cached load each in a new process, imports timed apart.

    python benchmarks/results/2026-11-26-gguf-open/open_bench.py [repeats] > results.json
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
MODELS = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]

# one new process: imports, open, tokenizer; SPECX_MODEL_CACHE decides fresh or cached
CHILD = """
import sys, time, json
t0 = time.perf_counter()
import transformers, tokenizers, torch  # what a specx run has imported before it loads a model
from specx.decoder.gguf_file import open_gguf
from specx.decoder.tokenizer import load_tokenizer, tokenizer_class
t1 = time.perf_counter()
g = open_gguf(sys.argv[1])
t2 = time.perf_counter()
tokenizer_class(g)  # the class's module import, timed apart
t3 = time.perf_counter()
tok = load_tokenizer(g)
t4 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "open": t2 - t1, "class import": t3 - t2, "tokenizer": t4 - t3}))
"""


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def in_process(path: Path, repeats: int) -> dict:
    import gguf
    from transformers import AutoTokenizer
    from transformers.integrations.gguf.reader import read_gguf_metadata

    from specx.decoder.gguf_file import open_gguf
    from specx.decoder.tokenizer import load_tokenizer

    big = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")
    rows = {k: [] for k in ("open_gguf", "GGUFReader", "transformers read_gguf_metadata",
                            "AutoTokenizer(gguf_file)", "load_tokenizer first", "load_tokenizer cached")}
    for _ in range(repeats):
        rows["open_gguf"].append(timed(lambda: open_gguf(path).close()))
        rows["GGUFReader"].append(timed(lambda: gguf.GGUFReader(path)))
        rows["transformers read_gguf_metadata"].append(timed(lambda: read_gguf_metadata(str(path), big)))
        rows["AutoTokenizer(gguf_file)"].append(
            timed(lambda: AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)))
        with tempfile.TemporaryDirectory() as cache, open_gguf(path) as g:
            os.environ["SPECX_MODEL_CACHE"] = cache
            rows["load_tokenizer first"].append(timed(lambda: load_tokenizer(g)))
            rows["load_tokenizer cached"].append(timed(lambda: load_tokenizer(g)))
    return {k: {"median": statistics.median(v), "all": v} for k, v in rows.items()}


def new_process(path: Path, repeats: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = {"first": [], "cached": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            env["SPECX_MODEL_CACHE"] = cache
            for kind in ("first", "cached"):
                run = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True,
                                     text=True, check=True)
                out[kind].append(json.loads(run.stdout.strip().splitlines()[-1]))
    return {kind: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for kind, runs in out.items()}


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    report = {"cpu": cpu(), "repeats": repeats, "load": os.getloadavg(), "models": {}}
    for name in MODELS:
        path = FIXTURES / f"{name}.gguf"
        report["models"][name] = {"in process": in_process(path, repeats), "new process": new_process(path, repeats)}
        print(name, json.dumps(report["models"][name], indent=1), file=sys.stderr, flush=True)
    report["load after"] = os.getloadavg()
    print(json.dumps(report, indent=1))


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return "unknown"


if __name__ == "__main__":
    main()
