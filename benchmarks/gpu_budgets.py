"""Consumer GPU budgets on a lent GPU (issue 38, item 4): the plan and the run under gpu=8/12/16/24 GiB.

    python benchmarks/gpu_budgets.py [--models /tmp/gpu-budget-models] [--budget-s 300] [--json $OUT/gpu_budgets.json]
    python benchmarks/gpu_budgets.py --smoke        (tiny shapes on the CPU, gpu=0 runs: checks the script runs)

Models: an 8B-shaped target and a 1B-shaped drafter, random bfloat16 weights (benchmarks/gpu_models.py) from
the real Llama-3.1-8B / Llama-3.2-1B configs (benchmarks/data/), written once (reused when the folder holds
weights) with the fixture Qwen tokenizer (.gpu/tokenizer). The configs keep Llama's 128,256-row vocabulary
(the real shapes); the Qwen tokenizer has more ids, so runs take a raw prompt (no chat template: its special
ids lie past 128,255) whose ids are checked below the vocabulary before anything runs. A random model emits
only ids below its vocabulary, which the tokenizer decodes.

Per budget, the largest first (each `specx` call a child process with its own timeout; a failure is recorded, never fatal; a
call is skipped when the overall cap would be passed): `specx plan --json` without and with the drafter,
then `specx run -n 64 --json` with `--drafter none` and with the drafter. Recorded: the plan's summary and
planned GPU bytes, the run's decode tok/s, acceptance, placement and `gpu_peak_bytes`
(torch.cuda.max_memory_allocated) against the plan, and any refusal (exit 4: the plan's table) or
out-of-memory crash (a bug). The output ends with one summary table; the JSON report goes to --json."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

BUDGETS = ("gpu=8GiB", "gpu=12GiB", "gpu=16GiB", "gpu=24GiB")
GGUF_BUDGETS = ("gpu=4GiB", "gpu=6GiB", "gpu=8GiB", "gpu=12GiB")   # --gguf: a 4.9 GB Q4_K_M 8B file
# smoke: gpu=0 runs on the CPU (the same CLI, plan and stats paths); the tiny cpu budget must refuse (exit 4)
SMOKE_BUDGETS = ("gpu=0", "gpu=0,cpu=1MiB")
CONFIGS = {"target": ROOT / "benchmarks/data/llama-3.1-8b.config.json",
           "drafter": ROOT / "benchmarks/data/llama-3.2-1b.config.json"}
GPU = "cuda:0"                   # the plan's name for the GPU (memory/plan.py DEVICES)
NEW_TOKENS = 64
PROMPT = "def merge_intervals(intervals):\n    "
PLAN_S, RUN_S = 90, 150          # per-call timeouts (a run includes loading 16 GB and any quantization)
RUN_NEEDS_S = 25                 # a run is not started with less than this left under the cap
OOM = ("OutOfMemoryError", "CUDA out of memory", "CUBLAS_STATUS_ALLOC_FAILED")
T0 = time.perf_counter()


def say(line: str) -> None:
    print(f"[{time.perf_counter() - T0:5.0f}s] {line}", flush=True)


def smoke_config(raw: dict) -> dict:
    """The real config at toy width and depth, keeping its vocabulary (the tokenizer check is the same)."""
    return {**raw, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16}


def build_models(out: Path, smoke: bool) -> dict:
    """Write the target and drafter folders once; returns {role: path} and the build time."""
    import torch

    from gpu_models import build

    device = "cuda" if torch.cuda.is_available() else "cpu"
    paths, seconds = {}, {}
    for seed, (role, config) in enumerate(CONFIGS.items()):
        path = out / role
        paths[role] = path
        if any(path.glob("*.safetensors")):
            say(f"{path}: present, reused")
            continue
        if smoke:
            small = out / f"{role}.config.json"
            small.parent.mkdir(parents=True, exist_ok=True)
            small.write_text(json.dumps(smoke_config(json.loads(config.read_text()))))
            config = small
        t = time.perf_counter()
        build(config, path, ROOT / ".gpu/tokenizer", device, seed)
        if device == "cuda":
            torch.cuda.empty_cache()
        seconds[role] = round(time.perf_counter() - t, 1)
        say(f"{role} built and written in {seconds[role]} s")
    return {"paths": {k: str(v) for k, v in paths.items()}, "build_s": seconds}


def check_prompt(paths: dict) -> list[int]:
    """The prompt's ids must lie inside both models' vocabularies (an id past it is an indexing fault on CUDA)."""
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(paths["target"])(PROMPT)["input_ids"]
    for role, path in paths.items():
        vocab = json.loads((Path(path) / "config.json").read_text())["vocab_size"]
        if max(ids) >= vocab:
            raise SystemExit(f"prompt id {max(ids)} is outside the {role}'s vocabulary ({vocab}): change PROMPT")
    return ids


def specx(args: list[str], timeout: float) -> dict:
    """One `specx` call: exit code, seconds, stdout, the stderr tail; never raises."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("SPECX_DEBUG", None)   # it turns refusals (exit 4) into tracebacks (exit 1)
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "specx", *args], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=ROOT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", _text(e.stdout), _text(e.stderr)
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("Loading")]
    return {"rc": rc, "s": round(time.perf_counter() - t, 1), "stdout": out, "err": "\n".join(lines[-25:]),
            "oom": any(k in err for k in OOM)}


def _text(b) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def plan(target: str, drafter: str, budget: str) -> dict:
    r = specx(["plan", target, "--drafter", drafter, "--mem-budget", budget, "--json"], PLAN_S)
    rec = {"rc": r["rc"], "s": r["s"]}
    if r["rc"] != 0:
        return {**rec, "refused": r["rc"] == 4, "err": r["err"]}
    p = json.loads(r["stdout"])
    return {**rec, "summary": p["summary"], "total_bytes": p["total_bytes"], "steady_bytes": p["steady_bytes"],
            "load_peak_bytes": p["load_peak_bytes"], "headroom_bytes": p["headroom_bytes"], "k_cap": p["k_cap"],
            "target": {k: p["target"][k] for k in ("dtype", "quant", "native", "share")},
            "drafter": p["drafter"] and {k: p["drafter"][k] for k in ("dtype", "quant", "native", "share")}}


def run(target: str, drafter: str, budget: str, timeout: float) -> dict:
    r = specx(["run", target, "--drafter", drafter, "--mem-budget", budget, "-n", str(NEW_TOKENS), "--raw",
               "--json", PROMPT], timeout)
    rec = {"rc": r["rc"], "s": r["s"], "oom": r["oom"]}
    events = [json.loads(x) for x in r["stdout"].splitlines() if x.strip().startswith("{")]
    stats = next((e["stats"] for e in reversed(events) if "stats" in e), None)
    if r["rc"] != 0 or stats is None:
        return {**rec, "refused": r["rc"] == 4, "err": r["err"]}
    keep = ("new_tokens", "decode_tok_s", "end_to_end_tok_s", "acceptance_rate", "mean_drafted", "k", "draft_policy",
            "placement", "gpu_peak_bytes", "peak_bytes", "prefill_s", "decode_s", "overhead_share")
    return {**rec, **{k: stats.get(k) for k in keep}}


def measure(paths: dict, budgets: tuple[str, ...], cap_s: float) -> list[dict]:
    """Plans first, side by side (no weights: seconds each), then the runs until the cap: the largest budget
    first, as the small ones quantize or offload and take longest; each budget plain, then drafted."""
    from concurrent.futures import ThreadPoolExecutor

    rows = [{"budget": b, "mode": mode, "drafter": d} for b in budgets[::-1]
            for mode, d in (("plain", "none"), ("drafter", paths["drafter"]))]
    with ThreadPoolExecutor(len(rows)) as pool:
        plans = pool.map(lambda r: plan(paths["target"], r["drafter"], r["budget"]), rows)
    for row, p in zip(rows, plans):
        row["plan"] = p
        say(f"plan {row['budget']} {row['mode']}: {_plan_cell(p)}")
    for row in rows:
        left = cap_s - (time.perf_counter() - T0)
        if left < RUN_NEEDS_S:
            row["run"] = {"skipped": f"{left:.0f} s left under the cap"}
            say(f"run {row['budget']} {row['mode']}: skipped ({left:.0f} s left)")
            continue
        row["run"] = run(paths["target"], row["drafter"], row["budget"], min(RUN_S, left))
        say(f"run {row['budget']} {row['mode']}: rc {row['run']['rc']} in {row['run']['s']} s")
        if row["run"].get("err"):
            print(row["run"]["err"][-1500:], flush=True)
    return rows


def measure_gguf(path: Path, budgets: tuple[str, ...], cap_s: float) -> list[dict]:
    """An 8B-shaped Q4_K_M GGUF (benchmarks/gguf_8b.py, written when absent) under each budget: its plan plain
    and self-drafting; a run only where the plan keeps its blocks wholly on the GPU (anything else would convert
    the 4.9 GB file to 32 GB of float32 for transformers' model: the plan says so, the run is not made)."""
    if not path.is_file():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "benchmarks/gguf_8b.py"), str(path)], check=True,
                       capture_output=True)
        say(f"{path} written in {time.perf_counter() - t:.0f} s ({path.stat().st_size / 1e9:.2f} GB)")
    rows = [{"budget": b, "mode": mode, "drafter": d} for b in budgets[::-1]
            for mode, d in (("plain", "none"), ("self", "self"))]
    for row in rows:
        row["plan"] = plan(str(path), row["drafter"], row["budget"])
        say(f"plan {row['budget']} {row['mode']}: {_plan_cell(row['plan'])}")
    for row in rows:
        p, left = row["plan"], cap_s - (time.perf_counter() - T0)
        whole = p["rc"] == 0 and p["target"]["native"] and p["target"]["share"] == "gpu"
        if not whole or left < RUN_NEEDS_S:
            row["run"] = {"skipped": "the plan does not keep the blocks on the GPU" if not whole else
                          f"{left:.0f} s left under the cap"}
            say(f"run {row['budget']} {row['mode']}: skipped ({row['run']['skipped']})")
            continue
        row["run"] = run(str(path), row["drafter"], row["budget"], min(RUN_S, left))
        say(f"run {row['budget']} {row['mode']}: rc {row['run']['rc']} in {row['run']['s']} s")
        if row["run"].get("err"):
            print(row["run"]["err"][-1500:], flush=True)
    return rows


def _gib(n) -> str:
    return "-" if n is None else f"{n / 2**30:.2f}"


def _plan_cell(p: dict) -> str:
    if p["rc"] != 0:
        return "REFUSED (exit 4)" if p.get("refused") else f"FAILED rc {p['rc']}"
    return p["summary"]


def _run_cells(r: dict, planned_gpu) -> tuple[str, str, str, str]:
    if "skipped" in r:
        return "skipped", "-", "-", "-"
    if r["rc"] != 0 or "decode_tok_s" not in r:
        state = "OOM (bug)" if r.get("oom") else "refused (4)" if r.get("refused") else f"rc {r['rc']}"
        return state, "-", "-", "-"
    peak = r.get("gpu_peak_bytes")
    ratio = f"{peak / planned_gpu:.2f}" if peak and planned_gpu else "-"
    acc = r.get("acceptance_rate")
    return f"{r['decode_tok_s']:.1f}", "-" if acc is None else f"{acc:.2f}", _gib(peak), ratio


def table(rows: list[dict], header: str) -> str:
    lines = [header, f"{'budget':<16}{'mode':<8}{'plan GiB gpu':>13}{'tok/s':>13}{'accept':>8}{'peak GiB':>10}"
             f"{'peak/plan':>10}  plan summary / run placement"]
    for row in rows:
        p, r = row["plan"], row.get("run", {"skipped": "not reached"})
        planned = (p.get("total_bytes") or {}).get(GPU)
        tok, acc, peak, ratio = _run_cells(r, planned)
        lines.append(f"{row['budget']:<16}{row['mode']:<8}{_gib(planned):>13}{tok:>13}{acc:>8}{peak:>10}{ratio:>10}"
                     f"  {_plan_cell(p)}" + (f" | ran: {r['placement']}" if r.get("placement") else ""))
    bad = [f"{r['budget']} {r['mode']}" for r in rows if r.get("run", {}).get("oom")]
    lines.append("out-of-memory crashes (bugs): " + (", ".join(bad) if bad else "none"))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path("/tmp/gpu-budget-models"))
    ap.add_argument("--budget-s", type=float, default=300, help="overall cap, seconds (model building included)")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU with gpu=0 budgets")
    ap.add_argument("--gguf", type=Path, help="an 8B-shaped Q4_K_M GGUF instead (written here when absent): its "
                    "blocks on the GPU under gpu=4/6/8/12GiB, plain and self-drafting")
    args = ap.parse_args()
    if args.smoke and args.models == ap.get_default("models"):
        args.models = Path("/tmp/gpu-budget-models-smoke")
    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU (smoke: tiny shapes)"
    say(f"device: {device}")
    report = {"device": device, "new_tokens": NEW_TOKENS, "prompt": PROMPT, "smoke": args.smoke}
    if args.gguf:
        report["rows"] = measure_gguf(args.gguf, GGUF_BUDGETS, args.budget_s)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=1))
        print("\n" + table(report["rows"], f"== an 8B-shaped Q4_K_M GGUF's blocks on {device}; {NEW_TOKENS} "
                           f"tokens; total {time.perf_counter() - T0:.0f} s"), flush=True)
        return
    report.update(build_models(args.models, args.smoke))
    report["prompt_ids"] = check_prompt(report["paths"])
    report["rows"] = measure(report["paths"], SMOKE_BUDGETS if args.smoke else BUDGETS, args.budget_s)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    build_s = ", ".join(f"{k} {v} s" for k, v in report["build_s"].items()) or "reused"
    print("\n" + table(report["rows"], f"== budgets on {device}; {NEW_TOKENS} tokens; models built: {build_s}; "
                       f"total {time.perf_counter() - T0:.0f} s"), flush=True)


if __name__ == "__main__":
    main()
