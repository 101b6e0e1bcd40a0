"""Speed of specx's GGUF block kernels (specx/cpu/quant.c) on Qwen2.5-1.5B's layer shapes.

    python benchmarks/quant_kernels.py [--types Q4_K,Q6_K,Q8_0,Q5_0] [--rows 1,2,5,9,17] [--reps 7]
    python benchmarks/quant_kernels.py --model FILE.gguf [--llama-cpp] [--map]

For each weight type, layer shape, mode and number of rows M: the median milliseconds of one call, the
weight bytes read per second, and the ratio to M = 1. Every call reads a different copy of the weights
(together larger than the last-level cache: `--working-set`), so each reads them from memory as a decoder's
layers do. The machine's read bandwidth is measured by the same library (a sum of a 1 GiB buffer), and
each kernel's rate is also given as a share of it. The float32 kernel (rowgemm) on the dequantized weights
runs the same shapes for comparison. Configurations alternate within each repeat so drift cancels.

With --model, every linear layer of a GGUF decoder's forward (fused QKV and gate/up, as the lean decoder
calls them, and the output layer) runs in turn on the file's own tensors, copied to 2 MiB pages as the
decoder's are (`--map`: read through the file's map): milliseconds per forward of M
tokens for the linear kernels alone; with --llama-cpp, llama.cpp's whole decoding step (one token, and M
tokens in one batch) on the same file and thread count stands beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from specx.cpu import quant, quant_ref
from specx.cpu.qweight import BLOCKS, QWeight, dequantize

# Qwen2.5-1.5B: (label, segments' rows, cols)
SHAPES = [
    ("q/o 1536x1536", (1536,), 1536),
    ("k/v 256x1536", (256,), 1536),
    ("gate+up 2x8960x1536", (8960, 8960), 1536),
    ("down 1536x8960", (1536,), 8960),
    ("vocab 151936x1536", (151936,), 1536),
]


def copies(name: str, segments: tuple[int, ...], cols: int, working_set: int, rng) -> list[list[QWeight]]:
    """Enough copies of a layer's weights (random valid blocks) to exceed `working_set` bytes together."""
    _, per, size = BLOCKS[name]
    layer = sum(segments) * cols // per * size
    n = max(2, -(-working_set // layer))
    pool = quant_ref.random_weight(name, n * sum(segments) * cols // 256, 256, rng, extreme=False).data
    out, at = [], 0
    for _ in range(n):
        group = []
        for rows in segments:
            nbytes = rows * cols // per * size
            group.append(QWeight(BLOCKS[name][0], pool[at:at + nbytes], rows, cols))
            at += nbytes
        out.append(group)
    return out


def bandwidth(lib, threads: int, reps: int) -> tuple[float, float]:
    """GB/s of one pass of `threads` threads over a 1 GiB buffer: (median, best)."""
    buffer = np.ones(1 << 30, np.uint8)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        quant.stream_read(lib, buffer, threads)
        times.append(time.perf_counter() - t)
    return buffer.size / statistics.median(times) / 1e9, buffer.size / min(times) / 1e9


def rows(labels: list[str], times: dict[int, list[float]], nbytes: int, bw: tuple[float, float]) -> str:
    """Two table rows (the median and the best of the repeats): ms per call for each M, weight GB/s at the
    first M and its share of the read bandwidth (median of median, best of best), each M's time over the first."""
    out = []
    for stat, pick, ceiling in (("median", statistics.median, bw[0]), ("best", min, bw[1])):
        ms = {m: pick(v) for m, v in times.items()}
        first = next(iter(ms.values()))
        rate = nbytes / first / 1e6
        out.append("| " + " | ".join(labels + [stat] + [f"{v:.3f}" for v in ms.values()]
                                     + [f"{rate:.1f}", f"{100 * rate / ceiling:.0f}%"]
                                     + [f"{v / first:.2f}" for v in list(ms.values())[1:]]) + " |")
    return "\n".join(out)


def header(labels: list[str], ms: list[int]) -> str:
    cells = labels + ["stat"] + [f"M={m} ms" for m in ms] + ["M=1 GB/s", "% of bw"] + [f"M={m}/M=1" for m in ms[1:]]
    return "| " + " | ".join(cells) + " |\n|" + "---|" * len(cells)


def timed(run, groups, reps: int) -> list[float]:
    """Milliseconds of each of `reps` calls, each on the next copy."""
    out = []
    for i in range(reps):
        t = time.perf_counter()
        run(groups[i % len(groups)])
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default="Q4_K,Q6_K,Q8_0,Q5_0")
    parser.add_argument("--shapes", default=",".join(str(i) for i in range(len(SHAPES))))
    parser.add_argument("--rows", default="1,2,5,9,17")
    parser.add_argument("--modes", default="f32,q8")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--working-set", type=int, default=1024, help="MiB of weight copies per layer")
    parser.add_argument("--rowgemm", action="store_true", help="also the float32 kernel on dequantized weights")
    parser.add_argument("--build", default="", help="a build name (quant.variants()); default: the best")
    parser.add_argument("--model", default="", help="a GGUF decoder: time its forward's linear layers")
    parser.add_argument("--llama-cpp", action="store_true", help="with --model: llama.cpp on the same file")
    parser.add_argument("--map", action="store_true",
                        help="with --model: read the layers through the file's map (default: copied to 2 MiB pages "
                             "where this machine offers them, as the lean decoder does: decoder/resident.py)")
    parser.add_argument("--hot", action="store_true",
                        help="the kernels' arithmetic alone: one 1024x1536 layer read again and again (from cache)")
    args = parser.parse_args()
    lib = quant.load(args.build) if args.build else quant._default()
    threads = torch.get_num_threads()
    ms = [int(m) for m in args.rows.split(",")]
    modes = args.modes.split(",")
    bw = bandwidth(lib, threads, 7)
    print(f"{lib.describe()}; threads {threads}; read bandwidth {bw[0]:.1f} GB/s median, {bw[1]:.1f} best "
          f"(1 GiB, {threads} threads)")
    if args.model:
        model_forward(lib, args.model, ms, modes, args.reps, bw, threads, args.llama_cpp, not args.map)
        return
    if args.hot:
        hot(lib, args.types.split(","), ms, modes, args.reps)
        return
    print(header(["type", "layer", "mode"], ms))
    rng = np.random.default_rng(0)
    for name in args.types.split(","):
        for index in (int(s) for s in args.shapes.split(",")):
            label, segments, cols = SHAPES[index]
            groups = copies(name, segments, cols, args.working_set << 20, rng)
            nbytes = sum(w.nbytes for w in groups[0])
            xs = {m: torch.randn(m, cols) for m in ms}
            results = {(mode, m): [] for mode in modes for m in ms}
            for _ in range(args.reps):
                for mode in modes:
                    for m in ms:
                        results[mode, m] += timed(lambda g: lib.matmul(xs[m], g, mode), groups, 3)
            for mode in modes:
                print(rows([name, label, mode], {m: results[mode, m] for m in ms}, nbytes, bw), flush=True)
            if args.rowgemm and name == args.types.split(",")[0]:
                rowgemm_row(label, groups, ms, xs, args.reps, bw)
            del groups


def hot(lib, types: list[str], ms, modes, reps: int) -> None:
    """GB/s of weights per call when they come from cache: what the arithmetic alone allows (best of
    10·reps calls), and each M's time over the first."""
    print("| type | mode | " + " | ".join(f"M={m} GB/s" for m in ms) + " | " + " | ".join(f"M={m}/M=1" for m in ms[1:])
          + " |\n|" + "---|" * (2 + 2 * len(ms) - 1))
    rng = np.random.default_rng(0)
    for name in types:
        w = quant_ref.random_weight(name, 1024, 1536, rng, extreme=False)
        for mode in modes:
            if mode == "q8" and BLOCKS[name][1] == 1:
                continue
            best = {}
            for m in ms:
                x = torch.randn(m, 1536)
                lib.matmul(x, [w], mode)
                best[m] = min(timed(lambda g: lib.matmul(x, g, mode), [[w]], 10 * reps))
            print(f"| {name} | {mode} | " + " | ".join(f"{w.nbytes / best[m] / 1e6:.1f}" for m in ms) + " | "
                  + " | ".join(f"{best[m] / best[ms[0]]:.2f}" for m in ms[1:]) + " |", flush=True)


def rowgemm_row(label: str, groups, ms, xs, reps: int, bw) -> None:
    """The float32 kernel on the same layer dequantized (float32 weights: 4 bytes per weight)."""
    from specx.cpu import rowgemm

    if not rowgemm.available():
        return
    weight = torch.from_numpy(np.concatenate([dequantize(w) for w in groups[0]]))
    need = max(2, -(-(1 << 30) // (weight.numel() * 4)))
    weights = [weight] + [weight.clone() for _ in range(min(need, 24) - 1)]
    results = {m: [] for m in ms}
    for _ in range(reps):
        for m in ms:
            results[m] += timed(lambda w: rowgemm.linear(xs[m], w), weights, 3)
    print(rows(["rowgemm F32", label, "f32"], results, weight.numel() * 4, bw), flush=True)


def layer_groups(path: str, resident: bool = False) -> list[list[QWeight]]:
    """The linear layers of a GGUF decoder in forward order, fused as the lean decoder calls them; `resident`:
    each copied into memory advised to use 2 MiB pages, as the lean decoder's layers are."""
    import gguf

    from specx.decoder import resident as pages

    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}

    def weight(name: str) -> QWeight:
        t = tensors[name]
        data = np.asarray(t.data).reshape(-1).view(np.uint8)
        if resident:
            copy = pages.region(data.nbytes)[:data.nbytes]
            copy[:] = data
            data = copy
        return QWeight(int(t.tensor_type), data, int(t.shape[1]), int(t.shape[0]))

    groups, block = [], 0
    while f"blk.{block}.attn_q.weight" in tensors:
        p = f"blk.{block}."
        groups += [[weight(p + "attn_q.weight"), weight(p + "attn_k.weight"), weight(p + "attn_v.weight")],
                   [weight(p + "attn_output.weight")],
                   [weight(p + "ffn_gate.weight"), weight(p + "ffn_up.weight")],
                   [weight(p + "ffn_down.weight")]]
        block += 1
    groups.append([weight("output.weight" if "output.weight" in tensors else "token_embd.weight")])
    return groups


def model_forward(lib, path: str, ms, modes, reps: int, bw, threads: int, llama: bool, resident: bool) -> None:
    """Milliseconds of all linear layers of one forward of M tokens (each layer's input a fresh (M, cols))."""
    from specx.decoder import resident as pages

    resident = resident and pages.wanted()   # where the decoder would copy them (huge pages offered)
    groups = layer_groups(path, resident)
    nbytes = sum(w.nbytes for g in groups for w in g)
    inputs = {m: {g[0].cols: torch.randn(m, g[0].cols) for g in groups} for m in ms}
    results = {(mode, m): [] for mode in modes for m in ms}
    peer = LlamaPeer(path, threads, ms) if llama else None
    for _ in range(reps):
        for mode in modes:
            for m in ms:
                t = time.perf_counter()
                for g in groups:
                    lib.matmul(inputs[m][g[0].cols], g, mode)
                results[mode, m].append((time.perf_counter() - t) * 1e3)
        if peer:
            peer.step()
    where = "on 2 MiB pages" if resident else "through the file's map"
    print(f"{path}: {len(groups)} linear calls per forward, {nbytes / 1e6:.0f} MB of weights, read {where}")
    print(header(["kernels", "mode"], ms))
    for mode in modes:
        print(rows([f"specx {lib.name}", mode], {m: results[mode, m] for m in ms}, nbytes, bw))
    if peer:
        print(rows(["llama.cpp (whole forward)", "its own"], peer.times, nbytes, bw))
        peer.close()


class LlamaPeer:
    """llama.cpp in a process of its own (two OpenMP runtimes spin-waiting in one process slow each other):
    one `step` times one eval of M tokens for each M, as llama_cpp_steps does there."""

    def __init__(self, path: str, threads: int, ms) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--llama-child", path, str(threads),
                                      ",".join(map(str, ms))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("llama.cpp did not start")
        self.times = {m: [] for m in ms}

    def step(self) -> None:
        self.proc.stdin.write("step\n")
        self.proc.stdin.flush()
        for m, ms in json.loads(self.proc.stdout.readline()).items():
            self.times[int(m)].append(ms)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def llama_child(path: str, threads: int, ms: list[int]) -> None:
    """The peer process: load llama.cpp, then time one step per line read."""
    steps = llama_cpp_steps(path, threads, ms)
    print("ready", flush=True)
    for _ in sys.stdin:
        before = {m: len(v) for m, v in steps.times.items()}
        steps.step()
        print(json.dumps({m: steps.times[m][before[m]] for m in ms}), flush=True)


class llama_cpp_steps:
    """llama.cpp (llama-cpp-python) decoding the same file: one timed eval of M tokens per `step`, after a
    fixed context of 47 tokens (the KV cache is trimmed back to it each time)."""

    def __init__(self, path: str, threads: int, ms) -> None:
        import llama_cpp
        import llama_cpp.llama

        default = llama_cpp.llama_model_default_params

        def plain():   # SPECX_LLAMA_NO_EXTRA_BUFTS=1: no AMX/repack buffers (their eval crashed on an AMX machine)
            params = default()
            params.use_extra_bufts = not os.environ.get("SPECX_LLAMA_NO_EXTRA_BUFTS")
            return params

        llama_cpp.llama.llama_cpp.llama_model_default_params = plain
        self.llm = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=512,
                                   verbose=False)
        self.context = self.llm.tokenize(b"def fibonacci(n):\n    return n if n < 2 else fib(n - 1)" * 4)[:64]
        self.llm.eval(self.context)
        self.ms, self.times = ms, {m: [] for m in ms}

    def step(self) -> None:
        for m in self.ms:
            self.llm.n_tokens = len(self.context) - 17   # the same 47 tokens of context before each eval
            t = time.perf_counter()
            self.llm.eval(self.context[-17:][:m])
            self.times[m].append((time.perf_counter() - t) * 1e3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--llama-child"]:
        llama_child(sys.argv[2], int(sys.argv[3]), [int(m) for m in sys.argv[4].split(",")])
    else:
        main()
