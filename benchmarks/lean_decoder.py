"""The lean decoder's cost outside its linear layers, and its load time.

    python benchmarks/lean_decoder.py MODEL.gguf [MODEL2.gguf …] [--contexts 100,500] [--tokens 1,5] [--reps 30]
                                       [--threads N] [--mode f32|q8]
    python benchmarks/lean_decoder.py --synthetic qwen2.5-1.5b,qwen2.5-0.5b …   (random F16 weights of those
                                       shapes, no file: for a machine without the fixtures; no load time)

Per model: load time (the GGUF's config and weights mapped; the tokenizer; the first forward, which for the
reference linear includes dequantizing the weights), then, after a prompt of each context length, forwards
of 1 and 5 tokens (each measured `--reps` times, cropped back between): the median time of the whole forward,
of its linear layers and embedding lookup (linear.matmul / linear.embed, timed around each call), and of the
rest, split into attention, norms, activation and the Python between them. "Outside %" is the rest over the
whole forward: the issue's bar is ≤ 15 % (1.5B) and ≤ 30 % (0.5B) of a 1-token forward once the native
kernels run the linear layers; with the reference linear (float32 rowgemm) the rest is the figure to read.

The split is timed on decoder/model.py's Python loop (cpu/layers.py's C loop off): the C loop makes the same
calls on the same kernels in the same order, but inside one C call, where Python cannot time them. Runs take the
C loop where it is built; its column is the whole forward so, alternating with the split's, and its outside share
is that total less the split's linear time (which includes each call's Python wrapper: a lower bound).
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

TIMED = {"linear": ("matmul", "embed"), "attention": ("attention",), "norms": ("residual_norm", "rmsnorm"),
         "activation": ("glu",)}


def instrument(spent: dict) -> None:
    """Wrap the decoder's kernels with timers that add into `spent` by group."""
    from specx.cpu import attention
    from specx.decoder import linear

    for group, names in TIMED.items():
        module = linear if group == "linear" else attention
        for name in names:
            inner = getattr(module, name)

            def timed(*args, _inner=inner, _group=group, **kwargs):
                t = time.perf_counter()
                try:
                    return _inner(*args, **kwargs)
                finally:
                    spent[_group] += time.perf_counter() - t
            setattr(module, name, timed)


# Qwen2.5-Coder's shapes, from the fixture GGUFs' metadata: hidden, MLP, layers, heads, kv heads, vocabulary
SHAPES = {"qwen2.5-1.5b": (1536, 8960, 28, 12, 2, 151936), "qwen2.5-0.5b": (896, 4864, 24, 14, 2, 151936)}


def synthetic(name: str, mode: str = "f32"):
    """A LeanLM of a shape in SHAPES with random F16 weights (the time outside the linear layers does not
    depend on the weights' values or format)."""
    import numpy as np
    import torch

    from specx.cpu.qweight import BLOCKS, QWeight
    from specx.decoder import config as configs
    from specx.decoder import lm as lean
    from specx.decoder.weights import LayerWeights, Weights

    hidden, inter, layers, heads, kv, vocab = SHAPES[name]
    c = configs.DecoderConfig("qwen2", vocab, hidden, inter, layers, heads, kv, hidden // heads, 1e-6, 32768,
                              configs.Rope(1e6))
    rng = np.random.default_rng(0)

    def matrix(rows, cols):
        data = (rng.standard_normal((rows, cols), dtype=np.float32) * cols ** -0.5).astype(np.float16)
        return QWeight(BLOCKS["F16"][0], data.view(np.uint8).reshape(-1), rows, cols)

    def layer():
        return LayerWeights(torch.ones(hidden), [matrix(c.q_size, hidden), matrix(c.kv_size, hidden),
                                                 matrix(c.kv_size, hidden)], torch.zeros(c.q_size + 2 * c.kv_size),
                            [matrix(hidden, c.q_size)], None, torch.ones(hidden),
                            [matrix(inter, hidden), matrix(inter, hidden)], [matrix(hidden, inter)])

    embed = matrix(vocab, hidden)
    weights = Weights(embed, [layer() for _ in range(layers)], torch.ones(hidden), matrix(vocab, hidden))
    return lean.LeanLM(lean.Decoder(c, weights, mode=mode), None, name)


def measure(path: Path | str, contexts: list[int], sizes: list[int], reps: int, mode: str) -> list[str]:
    from specx.decoder import lm as lean

    spent: dict = defaultdict(float)
    if isinstance(path, str):
        model = synthetic(path, mode)
        t = time.perf_counter()
        model.forward([1])
        rows = [f"| {path} (random F16) | first forward {time.perf_counter() - t:.2f} s | | | | | | | | |"]
        return rows + timings(model, spent, contexts, sizes, reps, path)
    t0 = time.perf_counter()
    gguf = lean.open_gguf(path)
    config = lean.configs.from_gguf(gguf.meta, {n: i.shape for n, i in gguf.tensors.items()})
    weights = lean.weight_files.from_gguf(gguf, config)
    t1 = time.perf_counter()
    model = lean.load(path, mode=mode)
    t2 = time.perf_counter()
    model.forward([1])
    t3 = time.perf_counter()
    rows = [f"| {path.stem} | load: file + weights mapped {t1 - t0:.2f} s, whole load (tokenizer too) {t2 - t1:.2f} s, "
            f"first forward {t3 - t2:.2f} s | | | | | | | | |"]
    del weights
    return rows + timings(model, spent, contexts, sizes, reps, path.stem)


def timings(model, spent: dict, contexts: list[int], sizes: list[int], reps: int, name: str) -> list[str]:
    from specx.cpu import layers

    rows = []
    layers.use(True)
    loop = layers.active()   # where the C loop runs, its whole forwards are timed too
    layers.use(False)   # the split is timed on the Python loop
    instrument(spent)
    for context in contexts:
        prompt = [(i * 7919) % 1000 + 100 for i in range(context)]
        model.reset()
        model.forward(prompt)
        for size in sizes:
            runs = defaultdict(list)
            for r in range(reps):
                if loop:
                    layers.use(True)
                    model.crop(context)
                    t = time.perf_counter()
                    model.forward(prompt[r:r + size])
                    runs["loop"].append(time.perf_counter() - t)
                    layers.use(False)
                model.crop(context)
                spent.clear()
                t = time.perf_counter()
                model.forward(prompt[r:r + size])
                total = time.perf_counter() - t
                runs["total"].append(total)
                for group in TIMED:
                    runs[group].append(spent[group])
                runs["python"].append(total - sum(spent.values()))
                runs["outside"].append(total - spent["linear"])
            med = {k: statistics.median(v) * 1e3 for k, v in runs.items()}
            outside = med["outside"]
            in_c = (f"{med['loop']:.1f} ({100 * (med['loop'] - med['linear']) / med['loop']:.0f} %)" if loop
                    else "(not built)")
            rows.append(f"| {name} | ctx {context}, {size} tok | {med['total']:.1f} | {med['linear']:.1f} | "
                        f"{outside:.2f} ({100 * outside / med['total']:.0f} %) | {med['attention']:.2f} | "
                        f"{med['norms']:.2f} | {med['activation']:.2f} | {med['python']:.2f} | {in_c} |")
    layers.use(True)
    return rows


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--synthetic", default="", help=f"comma-separated shapes of {', '.join(SHAPES)}")
    parser.add_argument("--contexts", default="100,500")
    parser.add_argument("--tokens", default="1,5")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch/OpenMP threads (default: torch's)")
    parser.add_argument("--mode", default="f32", help="the linear kernels' activation mode: f32 or q8")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from specx.cpu import attention
    from specx.decoder import linear

    print(f"threads {torch.get_num_threads()}; {linear.describe()}, mode {args.mode}; {attention.describe()}\n")
    print("| model | forward | total ms | linear ms | outside ms (share) | attention | norms | activation | python "
          "| C loop: total ms (outside share) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in [*args.models, *filter(None, args.synthetic.split(","))]:
        for row in measure(path, [int(c) for c in args.contexts.split(",")], [int(t) for t in args.tokens.split(",")],
                           args.reps, args.mode):
            print(row, flush=True)


if __name__ == "__main__":
    main()
