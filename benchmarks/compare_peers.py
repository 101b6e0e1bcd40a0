#!/usr/bin/env python3
"""specx against its peers on the same models, in one process: tok/s medians and output agreement.

    python benchmarks/compare_peers.py                      # fixture Qwen pair, float32, 128 tokens, 3 repeats
    python benchmarks/compare_peers.py --repeats 5 --json out.json

Methods (greedy, float32 unless --dtype): transformers generate, assisted generation
(assistant_model=, transformers' defaults: up to 20 draft tokens, confidence threshold 0.4),
prompt lookup (prompt_lookup_num_tokens=10, as transformers' docs show), and specx with the model
drafter, with ngram and with --drafter none. Methods alternate inside every repeat so drift cancels;
times include prefill (end to end per generation, model loading excluded).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
PROMPTS = {
    "code": "Write a Python function `merge_intervals(intervals)` that merges overlapping intervals, "
            "with a docstring and two doctests.",
    "chat": "I keep forgetting to drink water while programming. Give me five practical tips.",
    "summary": ("Summarise the following paragraph in three sentences.\n\nThe printing press, developed by "
                "Johannes Gutenberg around 1440, combined movable metal type, oil-based ink and a screw press "
                "adapted from wine making. It cut the cost of books dramatically, so that within fifty years "
                "millions of volumes circulated in Europe. Literacy rose, scientific results spread faster "
                "and could be checked by readers far away, and the Reformation used pamphlets to reach a "
                "mass audience. Historians still debate how much of the early modern transformation the "
                "press caused and how much it merely accelerated."),
    "edit": ("Add type hints to this function and return the complete code, changing nothing else:\n\n"
             "def moving_average(values, window):\n    if window <= 0:\n        raise ValueError('window must "
             "be positive')\n    out = []\n    total = 0.0\n    for i, v in enumerate(values):\n        total += v\n"
             "        if i >= window:\n            total -= values[i - window]\n        if i >= window - 1:\n"
             "            out.append(total / window)\n    return out\n"),
}


def hf_runner(model, assistant=None, lookup=None):
    def go(ids, n):
        kw = {"assistant_model": assistant} if assistant is not None else {}
        if lookup:
            kw["prompt_lookup_num_tokens"] = lookup
        with torch.inference_mode():
            out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False, temperature=None,
                                 top_p=None, top_k=None, **kw)
        return out[0, len(ids):].tolist()
    return go


def specx_runner(pair):
    from specx.runtime.loop import Generation
    from specx.runtime.types import Round, Sampling

    def go(ids, n):
        gen = Generation(pair.target, pair.drafter, ids, k=pair.k, max_tokens=n, sampling=Sampling())
        return [t for e in gen if isinstance(e, Round) for t in e.token_ids]
    return go


def dense(path, dtype):
    """The model as plain transformers loads it (no specx fast path), for the transformers rows."""
    from transformers import AutoModelForCausalLM

    from specx.runtime.models import model_dir, resolve, torch_dtype

    folder = model_dir(resolve(path), dtype)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype(dtype)).eval()


def strip_eos(tokens, eos):
    cut = next((i for i, t in enumerate(tokens) if t in eos), len(tokens))
    return tokens[:cut]


def agreement(model, ids, reference, got):
    """'same', or 'near-tie (gap)' / 'DIFFERS (gap)' at the first differing token."""
    if got == reference:
        return "same", None
    first = next((i for i, (a, b) in enumerate(zip(reference, got)) if a != b), min(len(reference), len(got)))
    with torch.inference_mode():
        logits = model(torch.tensor([ids + reference[:first]])).logits[0, -1].double()
    gap = float(torch.topk(logits, 2).values.diff().abs()[0])
    return ("near-tie" if gap < 1e-3 else "DIFFERS"), gap


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--drafter", default=str(FIXTURES / "qwen2.5-coder-0.5b.gguf"))
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("-k", type=int, default=4, help="specx draft tokens for the model drafter")
    ap.add_argument("--ngram-k", type=int, default=8, help="specx draft tokens for ngram")
    ap.add_argument("--methods", default="hf_generate,hf_assisted,hf_lookup,specx_model,specx_ngram,specx_none")
    ap.add_argument("--prompts", default=",".join(PROMPTS))
    ap.add_argument("--json", dest="json_path")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)

    from specx.runtime.api import prepare, prompt_ids

    model_pair = prepare(args.target, args.drafter, k=args.k, dtype=args.dtype)
    ngram_pair = prepare(args.target, "ngram", k=args.ngram_k, dtype=args.dtype)
    none_pair = prepare(args.target, "none", k=0, dtype=args.dtype)
    target, assistant = dense(args.target, args.dtype), dense(args.drafter, args.dtype)
    runners = {
        "hf_generate": hf_runner(target), "hf_assisted": hf_runner(target, assistant=assistant),
        "hf_lookup": hf_runner(target, lookup=10), "specx_model": specx_runner(model_pair),
        "specx_ngram": specx_runner(ngram_pair), "specx_none": specx_runner(none_pair),
    }
    methods = [m for m in args.methods.split(",") if m]
    prompts = {name: prompt_ids(model_pair.target.tokenizer, PROMPTS[name]) for name in args.prompts.split(",")}
    eos = model_pair.target.eos_ids
    rates: dict[str, dict[str, list[float]]] = {m: {p: [] for p in prompts} for m in methods}
    outputs: dict[tuple[str, str], list[int]] = {}
    for name, ids in prompts.items():  # warm-up: one short run of each method
        for m in methods:
            runners[m](ids, 4)
        break
    for rep in range(args.repeats):
        for name, ids in prompts.items():
            order = methods[rep % len(methods):] + methods[:rep % len(methods)]  # rotate: drift cancels
            for m in order:
                t = time.perf_counter()
                out = strip_eos(runners[m](ids, args.new_tokens), eos)
                dt = time.perf_counter() - t
                rates[m][name].append(len(out) / dt)
                outputs[(m, name)] = out
                print(f"rep {rep} {name:8s} {m:12s} {len(out):4d} tok {len(out) / dt:6.2f} tok/s", file=sys.stderr,
                      flush=True)
    return report(args, methods, prompts, rates, outputs, target)


def report(args, methods, prompts, rates, outputs, target) -> int:
    med = {m: {p: statistics.median(v) for p, v in rates[m].items()} for m in methods}
    overall = {m: statistics.median(list(med[m].values())) for m in methods}
    checks = {}
    for m in methods:
        for name, ids in prompts.items():
            if "hf_generate" in methods:
                checks[(m, name)] = agreement(target, ids, outputs[("hf_generate", name)], outputs[(m, name)])
    header = "| method | " + " | ".join(prompts) + " | overall (median) |"
    lines = [header, "|" + "---|" * (len(prompts) + 2)]
    for m in methods:
        cells = [f"{med[m][p]:.2f}" + ("" if checks.get((m, p), ("same",))[0] == "same"
                                       else f" ({checks[(m, p)][0]})") for p in prompts]
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {overall[m]:.2f} |")
    ratio = lambda a, b: overall[a] / overall[b] if a in overall and b in overall else float("nan")  # noqa: E731
    bars = [("specx_model / hf_assisted ≥ 1.0", ratio("specx_model", "hf_assisted"), 1.0),
            ("specx_none / hf_generate ≥ 0.95", ratio("specx_none", "hf_generate"), 0.95),
            ("specx_ngram / hf_lookup ≥ 1.0", ratio("specx_ngram", "hf_lookup"), 1.0)]
    print(f"\n{args.dtype}, greedy, {args.new_tokens} new tokens, {args.repeats} repeats, tok/s medians "
          f"(end to end, prefill included); specx k={args.k} (model), k={args.ngram_k} (ngram)\n")
    print("\n".join(lines))
    print()
    for text, value, bar in bars:
        print(f"- {text}: {value:.2f} {'ok' if value >= bar else 'MISSED'}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({
            "dtype": args.dtype, "new_tokens": args.new_tokens, "repeats": args.repeats, "k": args.k,
            "ngram_k": args.ngram_k, "tok_s": rates, "median": med, "overall": overall,
            "agreement": {f"{m}/{p}": v for (m, p), v in checks.items()}}, indent=1))
    return 1 if any(v[0] == "DIFFERS" for v in checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
