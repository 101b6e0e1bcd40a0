"""A GGUF's blocks on a lent GPU (issue 38, items 2 and 3): the block kernel against cuBLAS on bfloat16 copies, and
the CUDA decoder on Q4_K_M-shaped blocks against bfloat16 weights. One script, one compact report.

    python benchmarks/gpu_blocks.py [--budget-s 240] [--json $OUT/gpu_blocks.json] [--sweep]
    python benchmarks/gpu_blocks.py --smoke      (tiny shapes on the CPU, eagerly: checks the script runs)

Random planes made on the device (gpu/blocks.random_planes), the block types of each matrix as llama.cpp's
Q4_K_M recipe gives them (memory/gguf_price.tensor_type), shapes from the real configs (the fixture Qwen2.5-Coder
1.5B/0.5B, Llama-3.1-8B): timings are the shapes' real costs. Sections (each guarded, skipped past the cap):
a) kernels: each matrix shape of the 1.5B and 8B, bf16 cuBLAS against the block kernel at T = 1, 5, 16 (GPU
time of 20 calls in one CUDA graph, medians), bytes read per second against a device copy's; with --sweep, the
launch (rows per program, waves, pipeline stages) tried on two shapes; b) the decoder: 1.5B, 0.5B and 8B plain
decode (graphs) on blocks vs bf16, forward ms at T = 1, 2, 5, 9, 17, weight bytes. The log ends with a summary."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_lean  # noqa: E402
from gpu_lean import DECODE, ROWS, Runner, config, copy_bandwidth, forward_costs, med, plain_decode, report, say, \
    section  # noqa: E402

CALLS = 20          # kernel calls per timed graph
KERNEL_ROWS = (1, 5, 16)
FILE_TYPE = "Q4_K_M"


def types_for(c):
    """(role, layer) → block type, as a Q4_K_M file of this config holds each matrix."""
    from specx.memory.gguf_price import tensor_type

    def pick(role, layer):
        cols = c.intermediate_size if role == "mlp.down_proj" else c.q_size if role == "self_attn.o_proj" \
            else c.hidden_size
        return tensor_type(FILE_TYPE, "head" if role == "head" and c.tie_word_embeddings else role, layer,
                           c.num_hidden_layers, cols)
    return pick


def build(name: str, env, blocks: bool, seed: int = 0):
    from specx.decoder.dense import DenseDecoder
    from specx.decoder.dense_weights import random_block_weights, random_weights

    c = config(name, env.smoke)
    w = random_block_weights(c, types_for(c), env.dtype, env.device, seed) if blocks else \
        random_weights(c, env.dtype, env.device, seed)
    return DenseDecoder(c, w, gpu_lean.CONTEXT)


def shapes(name: str, env) -> list[tuple[str, str, int, int]]:
    """(label, block type, rows, cols) of each distinct matrix of a model (layer 0's types, and the head)."""
    c = config(name, env.smoke)
    t = types_for(c)
    h, q, kv, inter = c.hidden_size, c.q_size, c.kv_size, c.intermediate_size
    return [("q", t("self_attn.q_proj", 1), q, h), ("kv", t("self_attn.k_proj", 1), kv, h),
            ("o", t("self_attn.o_proj", 1), h, q), ("gate_up", t("mlp.gate_proj", 1), 2 * inter, h),
            ("down Q4_K", "Q4_K", h, inter), ("down Q6_K", "Q6_K", h, inter),
            ("head", t("head", None), c.vocab_size, h)]


def graph_ms(fn, env) -> float:
    """GPU ms of one call of fn: CALLS calls captured in one CUDA graph, replayed, medians of REPS."""
    import torch

    if env.device.type != "cuda":
        s = time.perf_counter()
        fn()
        return (time.perf_counter() - s) * 1e3
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            fn()
    times = []
    for i in range(gpu_lean.WARM + gpu_lean.REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        if i >= gpu_lean.WARM:
            times.append(a.elapsed_time(b) / CALLS)
    return med(times)


def sec_kernels(env, sweep: bool):
    import torch

    from specx.gpu import blocks, qmatmul

    g = torch.Generator(device=env.device).manual_seed(0)
    copy = copy_bandwidth(env) if env.device.type == "cuda" else float("nan")
    sms = torch.cuda.get_device_properties(0).multi_processor_count if env.device.type == "cuda" else 132
    res = {"copy_GB_s": copy / 1e9, "sms": sms, "shapes": {}}
    say(f"device copy {copy / 1e9:.0f} GB/s, {sms} multiprocessors")
    for model in ("qwen1.5b", "llama8b"):
        for label, kind, rows, cols in shapes(model, env):
            b = blocks.random_planes(kind, rows, cols, env.device, g)
            dense = torch.randn(rows, cols, device=env.device, dtype=env.dtype, generator=g)
            x = torch.randn(max(KERNEL_ROWS), cols, device=env.device, dtype=env.dtype, generator=g)
            launch = qmatmul.launch_for(rows, cols, sms)
            row = {"type": kind, "rows": rows, "cols": cols, "block_bytes": b.nbytes, "launch": str(launch)}
            for t in KERNEL_ROWS:
                out = torch.empty(t, rows, device=env.device, dtype=env.dtype)
                row[f"bf16_ms_T{t}"] = graph_ms(lambda: torch.nn.functional.linear(x[:t], dense), env)
                row[f"blocks_ms_T{t}"] = graph_ms(lambda: qmatmul.block_linear(x[:t], b, out, None, launch), env)
            row["blocks_GB_s_T1"] = b.nbytes / row["blocks_ms_T1"] / 1e6
            row["bf16_GB_s_T1"] = dense.numel() * 2 / row["bf16_ms_T1"] / 1e6
            res["shapes"][f"{model} {label}"] = row
            say(f"{model:9s} {label:10s} {kind:5s} {rows:6d}x{cols:5d} bf16 ms " +
                " ".join(f"{row[f'bf16_ms_T{t}']:.4f}" for t in KERNEL_ROWS) + " | blocks ms " +
                " ".join(f"{row[f'blocks_ms_T{t}']:.4f}" for t in KERNEL_ROWS) +
                f" | T=1 {row['blocks_GB_s_T1']:.0f} GB/s ({row['blocks_GB_s_T1'] / (copy / 1e9):.0%} of copy), "
                f"bf16 {row['bf16_GB_s_T1']:.0f} GB/s; {launch.block}x{launch.splits} splits")
            del dense
    if sweep:
        res["sweep"] = sweep_launches(env, sms, g)
    return res


def sweep_launches(env, sms: int, g) -> dict:
    """Launches tried on two shapes at T = 1 (rows per program, chunks a step, pipeline stages, each at 2, 4 and 8
    programs per multiprocessor): GPU ms of each."""
    import dataclasses

    import torch

    from specx.gpu import blocks, qmatmul

    out = {}
    for label, kind, rows, cols in (("1.5B down", "Q4_K", 1536, 8960), ("8B gate_up", "Q4_K", 28672, 4096)):
        b = blocks.random_planes(kind, rows, cols, env.device, g)
        x = torch.randn(16, cols, device=env.device, dtype=env.dtype, generator=g)
        timings = {}
        shapes = ((32, 1, 4), (32, 2, 3), (32, 2, 4), (32, 2, 5), (32, 4, 4), (16, 2, 4), (64, 1, 4), (64, 2, 4))
        for (block, chunks, stages), waves in [(shape, w) for shape in shapes for w in (2, 4, 8)]:
            cut = qmatmul.launch_for(rows, cols, sms, block, waves)
            launch = dataclasses.replace(cut, chunks=chunks if cut.per_split % chunks == 0 else cut.chunks, stages=stages)
            out1 = torch.empty(1, rows, device=env.device, dtype=env.dtype)
            try:
                ms = graph_ms(lambda: qmatmul.block_linear(x[:1], b, out1, None, launch), env)
            except Exception as e:   # noqa: BLE001 (a launch that does not compile is a result)
                ms = f"{type(e).__name__}"
            timings[f"rows {block}, step {launch.chunks}, stages {stages}, {launch.splits} splits"] = ms
        ranked = sorted((v, k) for k, v in timings.items() if isinstance(v, float))
        out[label] = {"bytes": b.nbytes, "timings": timings, "best": ranked[:3]}
        say(f"sweep {label}: best " + ", ".join(f"{k} {v:.4f} ms ({b.nbytes / v / 1e6:.0f} GB/s)"
                                                for v, k in ranked[:3]) +
            f"; default {qmatmul.launch_for(rows, cols, sms)}")
    return out


def sec_decoder(env):
    """Plain decode (graphs) and forward costs, blocks against bf16, for each model."""
    import torch

    res = {}
    for name in ("qwen1.5b", "qwen0.5b", "llama8b"):
        for blocks in (True, False):
            key = f"{name} {'blocks' if blocks else 'bf16'}"
            model = build(name, env, blocks)
            run = Runner(model, env.graphs)
            plain_decode(run, env, 8)
            tok_s, gpu = plain_decode(run, env, DECODE)
            costs = forward_costs(Runner(model, env.graphs), env)
            res[key] = {"weights_GB": model.weights.nbytes / 1e9, "decode_tok_s": tok_s, "gpu_ms_per_token": med(gpu),
                        "forward_ms": costs, "T5_over_T1": costs[5] / costs[1]}
            say(f"{key:16s} {model.weights.nbytes / 1e9:6.2f} GB: decode {tok_s:7.1f} tok/s (GPU {med(gpu):.3f} "
                f"ms/token); forward ms T={list(ROWS)}: " + " ".join(f"{v:.3f}" for v in costs.values()) +
                f" (T5/T1 {costs[5] / costs[1]:.2f})")
            del run, model
            if env.device.type == "cuda":
                torch.cuda.empty_cache()
    return res


def summary() -> None:
    r = report
    k, d = r.get("kernels", {}), r.get("decoder", {})
    lines = [f"device {r['device']['name']}, torch {r['device']['torch']}, triton {r['device'].get('triton')}; "
             f"copy {gpu_lean.fmt(k.get('copy_GB_s'), '.0f')} GB/s"]
    for label, row in k.get("shapes", {}).items():
        lines.append(f"{label:22s} T=1 bf16 {row['bf16_ms_T1']:.4f} ms, blocks {row['blocks_ms_T1']:.4f} ms "
                     f"({row['blocks_GB_s_T1']:.0f} GB/s); T=16 {row['bf16_ms_T16']:.4f} / {row['blocks_ms_T16']:.4f}")
    for key, row in d.items():
        if isinstance(row, dict) and "decode_tok_s" in row:
            lines.append(f"{key:16s} {row['weights_GB']:.2f} GB, {row['decode_tok_s']:.1f} tok/s, T5/T1 "
                         f"{row['T5_over_T1']:.2f}")
    gpu_lean.print_summary(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--json", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_blocks.json")
    ap.add_argument("--sweep", action="store_true", help="try launches on two shapes (48 compiles)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, eagerly")
    args = ap.parse_args()
    import torch

    env, name = gpu_lean.environment(args.smoke)
    try:
        import triton
        version = triton.__version__
    except ImportError:
        version = None
    report["device"]["triton"] = version
    say(f"device {name}, torch {torch.__version__}, triton {version}; cap {args.budget_s:.0f} s")
    if env.device.type == "cuda":
        section("kernels", 30, args.budget_s, sec_kernels, env, args.sweep)
    section("decoder", 30, args.budget_s, sec_decoder, env)
    gpu_lean.write_report(args.json)
    summary()


if __name__ == "__main__":
    main()
