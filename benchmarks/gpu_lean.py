"""The dense decoder with CUDA graphs on a lent GPU (issue 38): one script, one compact report, random weights.

    python benchmarks/gpu_lean.py [--budget-s 330] [--json $OUT/gpu_lean.json] [--acceptance 0.6,0.7,0.8]
    python benchmarks/gpu_lean.py --smoke          (tiny shapes on the CPU, eagerly: checks the script runs)

Models are random bfloat16 weights made on the device (decoder/dense_weights.random_weights) from real configs: the
fixture Qwen2.5-Coder 1.5B/0.5B pair (.gpu/target.config.json, .gpu/drafter.config.json, written by
gpu_check.sh prepare) and Llama-3.1-8B / Llama-3.2-1B (benchmarks/data/*.config.json). Timings are the
shapes' real costs; what random weights predict is meaningless, so no acceptance is measured here.

Sections (each guarded: a failure is reported and the next runs; each is skipped when the time cap would
be passed): a) 1.5B plain decode, eager vs graphs, and a speculative round's host overhead (verify k+1 = 5
after 4 steps of the 0.5B drafter: round wall time minus the graphs' GPU time); b) forward cost at
T = 1, 2, 5, 9, 17 (1.5B, 8B) and the 8B's decode bandwidth against a device copy's; c) bitsandbytes nf4 and
int8 linear cost on the 8B's layer shapes, with the kernels the profiler sees; d) self-drafting with the 8B's
first N layers: cost relative to the full model; e) engine/loop.py driving them (plain, drafted).
GPU times are CUDA events around graph replays, medians of REPS after warm-up. The log's last lines are a
summary table of the key numbers (only an output's tail may come back)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REPS = 25                      # timed repetitions per figure (medians), after WARM ones
WARM = 3
ROWS = (1, 2, 5, 9, 17)        # T: decode, and verify k+1 for k = 1, 4, 8, 16
PROMPT = 256                   # cached tokens before a timed forward
DECODE = 128                   # tokens of a plain decode
CONTEXT = 2048                 # cache slots of every benchmark model
CONFIGS = {"qwen1.5b": ROOT / ".gpu/target.config.json", "qwen0.5b": ROOT / ".gpu/drafter.config.json",
           "llama8b": ROOT / "benchmarks/data/llama-3.1-8b.config.json",
           "llama1b": ROOT / "benchmarks/data/llama-3.2-1b.config.json"}
# 8B layer shapes for bitsandbytes: (out, in) of q, k, v, o, gate, up, down
LAYER_8B = ((4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336))

report: dict = {}
T0 = time.perf_counter()


def say(line: str) -> None:
    print(f"[{time.perf_counter() - T0:5.0f}s] {line}", flush=True)


def section(name: str, needs_s: float, budget_s: float, fn, *args) -> None:
    """Run one section unless it would pass the cap; a failure is reported, never fatal."""
    left = budget_s - (time.perf_counter() - T0)
    if left < needs_s:
        say(f"{name}: skipped ({left:.0f} s left, needs ~{needs_s:.0f})")
        report[name] = {"skipped": f"{left:.0f} s left"}
        return
    say(f"== {name}")
    try:
        report[name] = fn(*args)
    except Exception as e:   # noqa: BLE001 — the report goes on
        say(f"{name}: FAILED {type(e).__name__}: {e}")
        report[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-2000:]}


def config(name: str, smoke: bool):
    from transformers import AutoConfig

    from specx.decoder import config as configs

    raw = json.loads(CONFIGS[name].read_text())
    raw.pop("_name_or_path", None)
    c = configs.from_hf(AutoConfig.for_model(**raw))
    if smoke:
        c = dataclasses.replace(c, vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                                num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope=configs.Rope(1e4))
    return c


def build(name: str, env, seed: int):
    from specx.decoder.dense import DenseDecoder
    from specx.decoder.dense_weights import random_weights

    return DenseDecoder(config(name, env.smoke), random_weights(config(name, env.smoke), env.dtype, env.device, seed),
                        CONTEXT)


class Runner:
    """A decoder with one cache, run through graphs (on CUDA) or eagerly; `gpu_ms` the timed replays' times."""

    def __init__(self, decoder, graphs: bool):
        from specx.decoder.graphs import Graphs

        self.decoder, self.cache = decoder, decoder.new_cache()
        self.graphs = Graphs(decoder, self.cache) if graphs else None
        self.fwd = self.graphs.forward if graphs else (lambda ids: decoder.forward(self.cache, ids))

    def timing(self, on: bool) -> None:
        if self.graphs is not None:
            self.graphs.timed = [] if on else None

    def gpu_ms(self) -> list[float]:
        import torch

        if self.graphs is None or not self.graphs.timed:
            return []
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in self.graphs.timed]


def med(xs) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def sync(env) -> None:
    if env.device.type == "cuda":
        import torch

        torch.cuda.synchronize()


def prompt(n: int, vocab: int, seed: int = 0) -> list[int]:
    import torch

    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def plain_decode(run: Runner, env, n: int) -> tuple[float, list[float]]:
    """Greedy decode of n tokens after PROMPT, reading each token on the host (as the engine does): tok/s, and
    the GPU ms of each timed replay."""
    run.cache.crop(0)
    run.decoder.forward(run.cache, prompt(PROMPT, run.decoder.config.vocab_size))
    tok = 1
    run.timing(True)
    t = time.perf_counter()
    for _ in range(n):
        tok = int(run.fwd([tok])[-1].argmax())
    wall = time.perf_counter() - t
    gpu = run.gpu_ms()
    run.timing(False)
    return n / wall, gpu


def forward_costs(run: Runner, env, rows=ROWS) -> dict[int, float]:
    """Median GPU ms (graphs) or wall ms (eager) of a forward of T rows after PROMPT cached tokens."""

    run.cache.crop(0)
    run.decoder.forward(run.cache, prompt(PROMPT, run.decoder.config.vocab_size))
    out = {}
    for t in rows:
        ids = prompt(t, run.decoder.config.vocab_size, t)
        walls = []
        for i in range(WARM + REPS):
            run.cache.crop(PROMPT)
            if i == WARM:
                run.timing(True)
            sync(env)
            s = time.perf_counter()
            run.fwd(ids)
            sync(env)
            walls.append((time.perf_counter() - s) * 1e3)
        gpu = run.gpu_ms()
        run.timing(False)
        out[t] = med(gpu) if gpu else med(walls[WARM:])
    return out


def sec_a(env):
    """1.5B plain decode eager vs graphs; the speculative round's host overhead with the 0.5B drafter."""
    target, drafter = build("qwen1.5b", env, 0), build("qwen0.5b", env, 1)
    env.keep["qwen1.5b"], env.keep["qwen0.5b"] = target, drafter
    res = {"weights_GB": target.weights.nbytes / 1e9}
    eager, graphed = Runner(target, False), Runner(target, env.graphs)
    plain_decode(graphed, env, 8)     # captures T=1 (span of PROMPT + DECODE)
    runs = {"eager": [], "graphs": []}
    gpu = []
    for _ in range(3):                # alternating, medians
        runs["eager"].append(plain_decode(eager, env, DECODE)[0])
        tps, ms = plain_decode(graphed, env, DECODE)
        runs["graphs"].append(tps)
        gpu += ms
    res.update({f"{k}_tok_s": med(v) for k, v in runs.items()})
    res["graphs_gpu_ms_per_token"] = med(gpu)
    if gpu:
        res["plain_host_overhead"] = 1 - med(gpu) / (1e3 / res["graphs_tok_s"])
    say(f"1.5B plain decode ({DECODE} tokens): eager {res['eager_tok_s']:.1f} tok/s, graphs "
        f"{res['graphs_tok_s']:.1f} tok/s; GPU {res['graphs_gpu_ms_per_token']:.3f} ms/token "
        f"(host overhead {res.get('plain_host_overhead', float('nan')):.1%})")
    res.update(spec_round(target, drafter, env))
    return res


def spec_round(target, drafter, env, k: int = 4) -> dict:
    """Rounds of k drafter steps (T=1, each token read on the host) and one target verify (T=k+1, its argmax
    read), both cropped back each round: wall time vs the graphs' GPU time."""
    t_run, d_run = Runner(target, env.graphs), Runner(drafter, env.graphs)
    ids = prompt(PROMPT, target.config.vocab_size)
    for run in (t_run, d_run):
        run.decoder.forward(run.cache, ids)
    walls, gpus = [], []
    for i in range(WARM + REPS):
        for run in (t_run, d_run):
            run.cache.crop(PROMPT)
            run.timing(i >= WARM)
        sync(env)
        s = time.perf_counter()
        tok, drafts = ids[-1], []
        for _ in range(k):
            tok = int(d_run.fwd([tok])[-1].argmax())
            drafts.append(tok)
        choice = t_run.fwd([ids[-1]] + drafts).argmax(-1).cpu()
        accepted = next((j for j, d in enumerate(drafts) if int(choice[j]) != d), k)
        t_run.cache.crop(PROMPT + accepted + 1)
        d_run.cache.crop(PROMPT + accepted)
        wall = (time.perf_counter() - s) * 1e3
        if i >= WARM:
            walls.append(wall)
            gpus.append(sum(t_run.gpu_ms() + d_run.gpu_ms()))
    res = {"round_wall_ms": med(walls), "round_gpu_ms": med(gpus) if gpus[0] else float("nan")}
    res["round_host_overhead"] = 1 - res["round_gpu_ms"] / res["round_wall_ms"]
    say(f"speculative round (k={k}: 4 drafter steps + verify of {k + 1}): wall {res['round_wall_ms']:.3f} ms, "
        f"GPU {res['round_gpu_ms']:.3f} ms, host overhead {res['round_host_overhead']:.1%}")
    return res


def sec_e(env):
    """engine/loop.py driving DenseLMs (graphs) with the fixture tokenizer: plain, and the 0.5B drafting k=4
    (random weights: acceptance means nothing; the engine's own overhead share is the figure)."""
    from transformers import AutoTokenizer

    from specx.decoder.dense_lm import DenseLM
    from specx.drafters.model import ModelDrafter, NoDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Sampling

    folder = ROOT / ".gpu/tokenizer"
    if not folder.is_dir():
        return {"skipped": "no .gpu/tokenizer (gpu_check.sh prepare)"}
    tok = AutoTokenizer.from_pretrained(folder)
    target = DenseLM(env.keep.get("qwen1.5b") or build("qwen1.5b", env, 0), tok, "target")
    drafter = DenseLM(env.keep.get("qwen0.5b") or build("qwen0.5b", env, 1), tok, "drafter")
    ids = prompt(PROMPT, min(len(tok), target.vocab_size))
    res = {}
    for name, k in (("plain", 0), ("drafter_k4", 4), ("plain", 0), ("drafter_k4", 4)):   # the second of each counts
        t, d = target.fresh(), drafter.fresh()
        draft = ModelDrafter(d, t.vocab_size, min(len(tok), t.vocab_size)) if k else NoDrafter()
        gen = Generation(t, draft, ids, k=k, max_tokens=DECODE, sampling=Sampling())
        for _ in gen:
            pass
        s = gen.stats
        res[name] = {"decode_tok_s": s.decode_tok_s, "overhead_share": s.overhead_share,
                     "acceptance_rate": getattr(s, "acceptance_rate", None)}
    for name, r in res.items():
        say(f"engine {name}: {r['decode_tok_s']:.1f} tok/s, overhead outside forward() {r['overhead_share']:.1%}")
    return res


def sec_b(env):
    """Forward cost at each T (graphs) for the 1.5B and 8B; the 8B's decode bandwidth vs a device copy."""
    import torch

    res = {}
    for name in ("qwen1.5b", "qwen0.5b"):
        model = env.keep.get(name) or build(name, env, 0)
        res[name] = forward_costs(Runner(model, env.graphs), env)
        say(f"{name} forward ms at T={list(ROWS)}: " + ", ".join(f"{v:.3f}" for v in res[name].values()) +
            f"  (T=5/T=1 {res[name][5] / res[name][1]:.2f})")
    env.keep.clear()
    if env.device.type == "cuda":
        torch.cuda.empty_cache()
    big = build("llama8b", env, 2)
    env.keep["llama8b"] = big
    res["llama8b"] = forward_costs(Runner(big, env.graphs), env)
    say("llama8b forward ms at T=" + str(list(ROWS)) + ": " + ", ".join(f"{v:.3f}" for v in res["llama8b"].values())
        + f"  (T=5/T=1 {res['llama8b'][5] / res['llama8b'][1]:.2f})")
    decoding = Runner(big, env.graphs)
    plain_decode(decoding, env, 8)    # captures T=1
    res["llama8b_decode_tok_s"], gpu = plain_decode(decoding, env, DECODE)
    say(f"llama8b plain decode ({DECODE} tokens, graphs): {res['llama8b_decode_tok_s']:.1f} tok/s, GPU "
        f"{med(gpu):.3f} ms/token")
    del decoding
    eager = forward_costs(Runner(big, False), env, (1,))[1]
    read = big.weights.nbytes - big.weights.embed.numel() * big.weights.embed.element_size()   # one embed row
    c = big.config
    kv = 2 * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 512 * big.dtype.itemsize   # span 512
    copy = copy_bandwidth(env)
    achieved = (read + kv) / (res["llama8b"][1] / 1e3)
    res["llama8b_bandwidth"] = {"eager_T1_wall_ms": eager, "bytes_per_token": read + kv,
                                "achieved_GB_s": achieved / 1e9, "copy_GB_s": copy / 1e9, "fraction": achieved / copy,
                                "tok_s_at_T1_gpu": 1e3 / res["llama8b"][1]}
    say(f"llama8b decode: {(read + kv) / 1e9:.2f} GB/token in {res['llama8b'][1]:.3f} ms = {achieved / 1e9:.0f} GB/s; "
        f"device copy {copy / 1e9:.0f} GB/s → {achieved / copy:.0%} of it (eager T=1 wall {eager:.2f} ms)")
    return res


def copy_bandwidth(env) -> float:
    """Bytes per second a big device-to-device copy moves (read + write)."""
    import torch

    n = (1 << 30) if env.device.type == "cuda" else (1 << 24)
    x = torch.empty(n, dtype=torch.uint8, device=env.device)
    y = torch.empty_like(x)
    times = []
    for i in range(WARM + REPS):
        if env.device.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); y.copy_(x); b.record(); b.synchronize()   # noqa: E702
            ms = a.elapsed_time(b)
        else:
            s = time.perf_counter(); y.copy_(x); ms = (time.perf_counter() - s) * 1e3   # noqa: E702
        if i >= WARM:
            times.append(ms)
    del x, y
    return 2 * n / (med(times) / 1e3)


def sec_c(env):
    """bitsandbytes nf4 and int8 on the 8B's layer shapes at each T: kernel time (profiler) per layer of 7
    linears, bf16 for reference, and the kernels that run."""
    import torch

    try:
        import bitsandbytes as bnb
    except Exception as e:   # noqa: BLE001
        say(f"bitsandbytes not importable: {e}")
        return {"skipped": f"bitsandbytes: {e}"}
    # Linear8bitLt warns on every bfloat16 call that it casts to float16: thousands of lines otherwise
    warnings.filterwarnings("ignore", message=".*inputs will be cast from")
    say(f"bitsandbytes {bnb.__version__}")
    res = {"version": bnb.__version__}
    kinds = {"bf16": lambda i, o: torch.nn.Linear(i, o, bias=False, dtype=torch.bfloat16),
             "nf4": lambda i, o: bnb.nn.Linear4bit(i, o, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4"),
             "int8": lambda i, o: bnb.nn.Linear8bitLt(i, o, bias=False, has_fp16_weights=False, threshold=6.0)}
    for kind, make in kinds.items():
        torch.manual_seed(0)
        layer = []
        for out_f, in_f in LAYER_8B:
            lin = make(in_f, out_f)
            if kind != "bf16":
                lin.weight.data.normal_(0, in_f ** -0.5)
            layer.append(lin.to(env.device).eval())
        costs, names, streams = {}, {}, {}
        for t in ROWS:
            x = torch.randn(t, 4096, dtype=torch.bfloat16, device=env.device)
            x_down = torch.randn(t, 14336, dtype=torch.bfloat16, device=env.device)

            def run():
                with torch.inference_mode():
                    for lin, (_, in_f) in zip(layer, LAYER_8B):
                        lin(x if in_f == 4096 else x_down)

            costs[t], names[t] = kernel_time(run, env)
            streams[t] = stream_time(run, env)
            if not costs[t]:   # the profiler saw no kernel time: the stream's time it is (launch gaps included)
                costs[t], names[t] = streams[t], names[t] + " (profiler: no kernel time; stream time)"
        res[kind] = {"layer_ms": costs, "stream_ms": streams, "T5_over_T1": costs[5] / costs[1],
                     "kernels_T1": names[1], "kernels_T5": names[5]}
        say(f"{kind:5s} 8B layer (7 linears) kernel ms at T={list(ROWS)}: "
            + ", ".join(f"{v:.3f}" for v in costs.values()) + f"  T=5/T=1 {costs[5] / costs[1]:.2f}")
        say("      stream ms (back-to-back calls, launch gaps included): "
            + ", ".join(f"{v:.3f}" for v in streams.values()))
        say(f"      kernels T=1: {names[1]}")
        say(f"      kernels T=5: {names[5]}")
        del layer
    return res


def stream_time(fn, env, reps: int = REPS) -> float:
    """ms per call of `reps` calls queued back to back between two CUDA events."""
    import torch

    for _ in range(WARM):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / reps


def kernel_time(fn, env, reps: int = REPS) -> tuple[float, str]:
    """(ms of device kernels per call, the 3 costliest kernels' names) from the PyTorch profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARM):
        fn()
    sync(env)
    with profile(activities=[ProfilerActivity.CUDA if env.device.type == "cuda" else ProfilerActivity.CPU]) as prof:
        for _ in range(reps):
            fn()
        sync(env)
    rows = []
    for e in prof.key_averages():
        if env.device.type == "cuda" and getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0) or (
            e.self_cpu_time_total if env.device.type != "cuda" else 0)
        rows.append((us, e.key))
    rows.sort(reverse=True)
    total = sum(us for us, _ in rows) / reps / 1e3
    return total, "; ".join(f"{k[:60]} {us / reps:.0f}us" for us, k in rows[:3])


def sec_d(env):
    """Self-drafting: the 8B's first N layers (its embedding and output layer) per token vs the full model."""
    from specx.decoder.dense import DenseDecoder
    from specx.decoder.dense_weights import DenseWeights

    big = env.keep.get("llama8b") or build("llama8b", env, 2)
    full = forward_costs(Runner(big, env.graphs), env, (1,))[1]
    res = {"full_T1_ms": full}
    for n in (4, 8):
        w = big.weights
        short = DenseDecoder(dataclasses.replace(big.config, num_hidden_layers=n),
                             DenseWeights(w.embed, w.layers[:n], w.norm, w.output), CONTEXT)
        ms = forward_costs(Runner(short, env.graphs), env, (1,))[1]
        res[f"first{n}"] = {"T1_ms": ms, "relative": ms / full}
        say(f"8B first {n} layers: {ms:.3f} ms/token = {ms / full:.1%} of the full model's {full:.3f} ms")
    return res


def computed_speedups(acceptances: list[float]) -> dict:
    """Expected speedup (computed, not measured) of k-token drafting at acceptance rate a per token, from the
    measured costs: tokens per round (1 - a^(k+1)) / (1 - a) over (k drafter steps + a verify of k+1), in
    units of a plain target step."""
    costs = report.get("b_forward_costs", {})
    target, drafter = costs.get("qwen1.5b"), costs.get("qwen0.5b")
    if not target or not drafter:
        return {}
    out = {}
    for a in acceptances:
        for k in (1, 4, 8):
            tokens = (1 - a ** (k + 1)) / (1 - a) if a < 1 else k + 1
            out[f"a={a},k={k}"] = tokens * target[1] / (k * drafter[1] + target[k + 1])
    say("computed speedups (1.5B target, 0.5B drafter, these forward costs): " +
        ", ".join(f"{key} {v:.2f}x" for key, v in out.items()))
    return out


# aten ops that launch no kernel of their own (views, allocation, dtype no-ops, host scalars)
NO_KERNEL = frozenset("""view _unsafe_view as_strided slice select split split_with_sizes transpose permute expand t
    unsqueeze squeeze alias detach detach_ unbind chunk _reshape_alias reshape narrow empty empty_strided resize_
    lift_fresh unflatten flatten to result_type empty_like contiguous item _local_scalar_dense is_nonzero resolve_conj
    resolve_neg view_as expand_as _has_compatible_shallow_copy_type scalar_tensor""".split())


# composite ops on the CPU that CUDA runs as one kernel (rms_norm since torch 2.8) or one attention kernel call
FUSED = frozenset({"rms_norm", "scaled_dot_product_attention"})


def count_ops(decoder, rows: int = 1) -> dict[str, int]:
    """Kernel-launching aten ops in one forward of `rows` tokens after a short prefill, from torch.profiler on the
    CPU: the leaves of the op tree (an op whose children launch nothing counts once), views and allocations not
    counted, and the ops CUDA runs as one fused kernel (FUSED) counted once. A proxy for the kernels a CUDA graph
    replays."""
    import collections

    from torch.profiler import ProfilerActivity, profile

    def leaves(e, out) -> bool:
        name = e.name[6:] if e.name.startswith("aten::") else None
        if name == "scalar_tensor":
            return False
        if name in FUSED:
            out[name] += 1
            return True
        found = False
        for child in e.cpu_children:
            found |= leaves(child, out)
        if not found and name is not None and name not in NO_KERNEL:
            out[name] += 1
            return True
        return found

    cache = decoder.new_cache()
    decoder.forward(cache, prompt(8, decoder.config.vocab_size))
    ids = prompt(rows, decoder.config.vocab_size, 1)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        decoder.forward(cache, ids)
    out = collections.Counter()
    for e in prof.events():
        if e.cpu_parent is None:
            leaves(e, out)
    return dict(out.most_common())


def ops_report() -> dict:
    """count_ops of the smoke-shaped 1.5B (3 layers) in bfloat16 on the CPU, T = 1 and 5."""
    import torch

    env = argparse.Namespace(smoke=True, device=torch.device("cpu"), dtype=torch.bfloat16)
    model = build("qwen1.5b", env, 0)
    res = {f"T{t}": count_ops(model, t) for t in (1, 5)}
    for t, ops in res.items():
        say(f"ops per {t} forward ({model.config.num_hidden_layers} layers, bf16, CPU profiler): "
            f"{sum(ops.values())} ({sum(ops.values()) / model.config.num_hidden_layers:.0f}/layer); "
            + ", ".join(f"{k} {v}" for k, v in ops.items()))
    return res


def environment(smoke: bool):
    """(env, the device's name): the device, dtype and graphs a GPU benchmark runs with (the CPU, float32 and
    eagerly for --smoke or without CUDA), and report["device"] set."""
    import torch

    env = argparse.Namespace(smoke=smoke, keep={})
    env.device = torch.device("cpu" if smoke or not torch.cuda.is_available() else "cuda")
    env.dtype = torch.float32 if env.device.type == "cpu" else torch.bfloat16
    env.graphs = env.device.type == "cuda"
    name = torch.cuda.get_device_name() if env.device.type == "cuda" else "CPU (smoke: tiny shapes, no graphs)"
    report["device"] = {"name": name, "torch": torch.__version__, "dtype": str(env.dtype)}
    return env, name


def failures() -> list[str]:
    """A line per section that failed."""
    return [f"FAILED {k}: {v['error']}" for k, v in report.items() if isinstance(v, dict) and "error" in v]


def write_report(path: Path) -> None:
    """The report, with the run's total time, as JSON at `path`."""
    report["total_s"] = time.perf_counter() - T0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))
    say(f"done in {report['total_s']:.0f} s; JSON: {path}")


def print_summary(lines: list[str]) -> None:
    """The run's summary block: `lines`, then a line per section that failed."""
    print("\n==== summary " + "=" * 60, flush=True)
    for line in lines + failures():
        print(line, flush=True)


def fmt(x, spec: str = ".2f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) else "-"


def summary() -> None:
    """The key numbers as a short table, the log's last lines."""
    r = report
    a, b, d = r.get("a_decode_and_round", {}), r.get("b_forward_costs", {}), r.get("d_self_drafting", {})
    e, c, ops = r.get("e_engine", {}), r.get("c_bitsandbytes", {}), r.get("ops", {})
    bw = b.get("llama8b_bandwidth", {})
    lines = [f"device {r['device']['name']}, torch {r['device']['torch']}",
             f"ops/forward (CPU profile, tiny 3-layer 1.5B): T=1 {sum(ops.get('T1', {}).values()) or '-'}, "
             f"T=5 {sum(ops.get('T5', {}).values()) or '-'}",
             f"1.5B plain decode tok/s: eager {fmt(a.get('eager_tok_s'), '.1f')}, graphs "
             f"{fmt(a.get('graphs_tok_s'), '.1f')} (GPU {fmt(a.get('graphs_gpu_ms_per_token'), '.3f')} ms/token)",
             f"round k=4 (1.5B+0.5B): wall {fmt(a.get('round_wall_ms'), '.3f')} ms, GPU "
             f"{fmt(a.get('round_gpu_ms'), '.3f')} ms, host {fmt(a.get('round_host_overhead'), '.1%')}",
             f"engine tok/s: plain {fmt(e.get('plain', {}).get('decode_tok_s'), '.1f')}, 0.5B k=4 "
             f"{fmt(e.get('drafter_k4', {}).get('decode_tok_s'), '.1f')}"]
    for name in ("qwen1.5b", "qwen0.5b", "llama8b"):
        if isinstance(b.get(name), dict):
            lines.append(f"{name:9s} forward ms T={','.join(map(str, ROWS))}: "
                         + " ".join(fmt(b[name].get(t), ".3f") for t in ROWS))
    lines.append(f"8B plain decode (graphs) {fmt(b.get('llama8b_decode_tok_s'), '.1f')} tok/s; T=1 "
                 f"{fmt(bw.get('achieved_GB_s'), '.0f')} GB/s of copy {fmt(bw.get('copy_GB_s'), '.0f')} = "
                 f"{fmt(bw.get('fraction'), '.0%')}")
    lines.append("8B self-draft first 4/8 layers relative: " + " / ".join(
        fmt(d.get(f"first{n}", {}).get("relative"), ".1%") for n in (4, 8)))
    for kind in ("bf16", "nf4", "int8"):
        if isinstance(c.get(kind), dict):
            lines.append(f"8B layer {kind:4s} ms T=1,5: " + " ".join(fmt(c[kind]["layer_ms"].get(t), ".3f")
                                                             for t in (1, 5)))
    speed = r.get("computed_speedups") or {}
    if speed:
        lines.append("computed speedups: " + ", ".join(f"{k} {v:.2f}x" for k, v in speed.items() if "k=4" in k))
    print_summary(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--json", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_lean.json")
    ap.add_argument("--acceptance", default="0.6,0.7,0.8", help="per-token acceptance rates for computed speedups")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, eagerly")
    ap.add_argument("--ops", action="store_true", help="only count the ops of a forward (CPU profiler) and stop")
    args = ap.parse_args()
    import torch

    if args.ops:
        ops_report()
        return

    env, name = environment(args.smoke)
    say(f"device {name}, torch {torch.__version__}, {env.dtype}; cap {args.budget_s:.0f} s")
    section("ops", 5, args.budget_s, ops_report)
    section("a_decode_and_round", 20, args.budget_s, sec_a, env)
    section("e_engine", 15, args.budget_s, sec_e, env)
    section("b_forward_costs", 40, args.budget_s, sec_b, env)
    section("d_self_drafting", 10, args.budget_s, sec_d, env)
    env.keep.clear()
    if env.device.type == "cuda":
        torch.cuda.empty_cache()
        section("c_bitsandbytes", 20, args.budget_s, sec_c, env)
        report["peak_GB"] = torch.cuda.max_memory_allocated() / 1e9
    report["computed_speedups"] = computed_speedups([float(a) for a in args.acceptance.split(",")])
    write_report(args.json)
    summary()


if __name__ == "__main__":
    main()
