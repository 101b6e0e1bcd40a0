#!/usr/bin/env python3
"""The memory plan against the measured peak RSS, at the context the plan is for.

    python benchmarks/plan_rss.py [MODEL.gguf ...] [--fill 0.95] [--drafter none]

For each model: `specx plan MODEL --drafter D --json` (planned peak RSS, `rss_bytes`, at its context, 4096 tokens or the
model's limit), then `specx run MODEL --drafter D --raw` in a child process on a prompt that fills `fill` of that
context, 16 new tokens; the child's peak RSS (getrusage) against the plan. Default models: the fixtures.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
SPECX = [sys.executable, "-m", "specx"]
HERE = Path(__file__).resolve().parent


def planned(model: str, drafter: str) -> tuple[int, int]:
    """(planned peak RSS, planned context) from `specx plan --json`."""
    out = subprocess.run([*SPECX, "plan", model, "--drafter", drafter, "--json"], capture_output=True, text=True,
                         check=True).stdout
    plan = json.loads(out)
    return int(plan["rss_bytes"]), int(plan["context"])


def prompt_of(model: str, tokens: int) -> str:
    """Text of about `tokens` tokens for this model: the quality benchmark's prose and every bench prompt (a
    varied text: a repeated sentence would touch only a few rows of a mapped embedding), repeated as needed,
    cut with the model's tokenizer."""
    import tomllib

    from specx.decoder.gguf_file import open_gguf
    from specx.decoder.tokenizer import load_tokenizer

    tok = load_tokenizer(open_gguf(model))
    prompts = tomllib.loads((HERE.parent / "specx/bench/prompts.toml").read_text())
    unit = (HERE / "data/quality.txt").read_text() + "\n".join(p["text"] for p in prompts["prompt"])
    text = unit * (tokens // max(len(tok(unit)["input_ids"]), 1) + 1)
    ids = tok(text)["input_ids"][:tokens]
    return tok.decode(ids)


def peak_rss(model: str, drafter: str, prompt: str) -> int:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([*SPECX, "run", model, "--drafter", drafter, "--raw", "-n", "16", "--no-stats", prompt],
                   capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after <= before:
        raise SystemExit("run each model in its own process: getrusage keeps the largest child's peak")
    return after * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--fill", type=float, default=0.95)
    ap.add_argument("--drafter", default="none")
    a = ap.parse_args()
    models = a.models or [str(FIXTURES / f) for f in ("smollm2-135m.gguf", "gemma3-270m.gguf",
                                                        "qwen2.5-coder-0.5b.gguf", "qwen2.5-coder-1.5b.gguf")]
    if len(models) > 1:   # one child process per model: getrusage reports the largest child only
        for m in models:
            subprocess.run([sys.executable, __file__, m, "--fill", str(a.fill), "--drafter", a.drafter], check=True)
        return
    model = models[0]
    plan, context = planned(model, a.drafter)
    rss = peak_rss(model, a.drafter, prompt_of(model, int(context * a.fill)))
    print(f"| {Path(model).name} | {os.path.getsize(model) / 2**20:,.0f} MiB | {context} | {plan / 2**20:,.0f} MiB | "
          f"{rss / 2**20:,.0f} MiB | {plan / rss:.2f} |", flush=True)


if __name__ == "__main__":
    main()
