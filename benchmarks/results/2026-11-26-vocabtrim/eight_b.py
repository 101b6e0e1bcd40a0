"""Plain decoding of benchmarks/gguf_8b.py's file: specx against llama.cpp (cpu_bars.LlamaCpp, a child process;
SPECX_LLAMA_PYTHON picks its build), alternating, decode tok/s after a 16-token prompt.

    python eight_b.py /tmp/l8b.gguf [--repeats 3] [--tokens 32]"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/
from cpu_bars import LlamaCpp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=32)
    a = ap.parse_args()
    import torch

    import specx
    from specx.api import generation
    from specx.engine.types import Done
    from specx.options import RunOptions

    ids = list(range(300, 316))
    t = time.perf_counter()
    pair = specx.load(a.path, "none")
    print(f"specx loaded in {time.perf_counter() - t:.1f} s", flush=True)
    llama = LlamaCpp(a.path, torch.get_num_threads())
    rates = {"specx": [], "llama.cpp": []}
    try:
        for r in range(a.repeats):
            for name in (["specx", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "specx"]):
                if name == "specx":
                    stats = next(e.stats for e in generation(pair, ids, RunOptions(max_tokens=a.tokens, raw=True))
                                 if isinstance(e, Done))
                    rate = stats.decode_tok_s
                else:
                    tokens, total, first = llama.generate(ids, a.tokens, [])
                    rate = (len(tokens) - 1) / (total - first)
                rates[name].append(rate)
                print(f"rep {r} {name:9} {rate:.2f} tok/s", flush=True)
    finally:
        llama.close()
    for name, v in rates.items():
        print(f"{name}: median {statistics.median(v):.2f} tok/s ({', '.join(f'{x:.2f}' for x in v)})")


if __name__ == "__main__":
    main()
