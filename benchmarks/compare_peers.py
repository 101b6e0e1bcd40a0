#!/usr/bin/env python3
"""specx against its peers on the same models, in one process: tok/s medians and output agreement.

    python benchmarks/compare_peers.py                      # fixture Qwen pair, float32, 128 tokens, 3 repeats
    python benchmarks/compare_peers.py --repeats 5 --json out.json

Methods (greedy): transformers generate, assisted generation (assistant_model=, transformers'
defaults: up to 20 draft tokens, confidence threshold 0.4) and prompt lookup
(prompt_lookup_num_tokens=10, as transformers' docs show), all in --dtype (float32); specx with the
model drafter, ngram and --drafter none, with float32 target weights (`specx_*`) and with fp16 target
weights (`specx_fp16_*`; the drafter is fp16 in both, specx's default); llama.cpp through
llama-cpp-python on the same GGUF file in its own quantization (`llamacpp`, and `llamacpp_lookup`
with its prompt-lookup drafter, 10 tokens) — install with `pip install llama-cpp-python`.
Methods alternate inside every repeat so drift cancels; times include prefill (end to end per
generation, model loading excluded). Each output is checked against the plain decoding of the same
precision (float32: transformers generate; fp16: specx_fp16_none; llama.cpp: llamacpp).
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


def suite_prompts() -> dict[str, str]:
    """The bench suite's calibration subset: the first prompt of each category (specx/bench/prompts.toml)."""
    from specx.bench.suite import bundled, calibration

    return {p.category: p.text for p in calibration(bundled())}


PROMPTS = suite_prompts()


def hf_runner(model, assistant=None, lookup=None):
    import copy

    # transformers adapts the assistant's draft length in its generation_config and keeps it across
    # calls: every generation here starts from the defaults, as a fresh process would.
    fresh = copy.deepcopy(assistant.generation_config) if assistant is not None else None

    def go(ids, n):
        kw = {"assistant_model": assistant} if assistant is not None else {}
        if assistant is not None:
            assistant.generation_config = copy.deepcopy(fresh)
        if lookup:
            kw["prompt_lookup_num_tokens"] = lookup
        with torch.inference_mode():
            out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False, temperature=None,
                                 top_p=None, top_k=None, **kw)
        return out[0, len(ids):].tolist()
    return go


def specx_runner(pair, policy: str = "fixed"):
    from specx.engine.loop import Generation
    from specx.policy.policy import make
    from specx.engine.types import Round, Sampling

    def go(ids, n):
        gen = Generation(pair.target, pair.drafter, ids, k=pair.k, max_tokens=n, sampling=Sampling(),
                         policy=make(policy, pair.k))
        return [t for e in gen if isinstance(e, Round) for t in e.token_ids]
    return go


def llamacpp_runner(path, eos, lookup: int = 0):
    """llama.cpp's own decoding of the GGUF file (greedy); `lookup` > 0 adds its prompt-lookup drafter."""
    from llama_cpp import Llama
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    draft = LlamaPromptLookupDecoding(num_pred_tokens=lookup) if lookup else None
    llm = Llama(model_path=path, n_ctx=4096, n_threads=torch.get_num_threads(), n_batch=512, verbose=False,
                draft_model=draft)

    def go(ids, n):
        out = []
        for token in llm.generate(ids, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0, reset=True):
            if token in eos or len(out) >= n:
                break
            out.append(int(token))
        return out
    return go


def bandwidth_gb_s(size_mb: int = 512, reps: int = 5) -> float:
    """Memory bandwidth the way decoding uses it: read a large buffer (sum), median of reps."""
    x = torch.ones(size_mb * 2 ** 20 // 4)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        float(x.sum())
        times.append(time.perf_counter() - t)
    return x.numel() * 4 / statistics.median(times) / 1e9


def weight_bytes_per_token(lm) -> dict[str, float]:
    """Bytes of linear weights read per decoded token, per precision (embedding lookups excluded)."""
    n = lm.n_params - lm.model.get_input_embeddings().weight.numel()
    if getattr(lm.model.config, "tie_word_embeddings", False):
        n += lm.model.get_input_embeddings().weight.numel()   # the tied head is read in full
    return {"float32": 4 * n, "fp16": 2 * n, "int8": n, "int4 (groups of 32)": 0.625 * n}


def dense(path, dtype):
    """The model as plain transformers loads it (no specx fast path), for the transformers rows."""
    from specx.bench.peers import stock_model

    return stock_model(path, dtype, "cpu")


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
    ap.add_argument("--policy", default="fixed", help="specx draft policy for the speculative rows (fixed, auto, …)")
    ap.add_argument("--methods", default="hf_generate,hf_assisted,hf_lookup,specx_model,specx_ngram,specx_none,"
                    "specx_fp16_model,specx_fp16_ngram,specx_fp16_none,llamacpp,llamacpp_lookup")
    ap.add_argument("--prompts", default=",".join(PROMPTS))
    ap.add_argument("--json", dest="json_path")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)

    from specx import load
    from specx.api import prompt_ids

    methods = [m for m in args.methods.split(",") if m]
    tokenizer_pair = load(args.target, "none", k=0, dtype=args.dtype)
    eos = tokenizer_pair.target.eos_ids
    makers = {
        "hf_generate": lambda: hf_runner(dense_target()),
        "hf_assisted": lambda: hf_runner(dense_target(), assistant=dense(args.drafter, args.dtype)),
        "hf_lookup": lambda: hf_runner(dense_target(), lookup=10),
        "specx_model": lambda: specx_runner(load(args.target, args.drafter, k=args.k, dtype=args.dtype),
                                            args.policy),
        "specx_ngram": lambda: specx_runner(load(args.target, "ngram", k=args.ngram_k, dtype=args.dtype),
                                            args.policy),
        "specx_none": lambda: specx_runner(tokenizer_pair),
        "specx_fp16_model": lambda: specx_runner(load(args.target, args.drafter, k=args.k, quant="fp16"),
                                                 args.policy),
        "specx_fp16_ngram": lambda: specx_runner(load(args.target, "ngram", k=args.ngram_k, quant="fp16"),
                                                 args.policy),
        "specx_fp16_none": lambda: specx_runner(load(args.target, "none", k=0, quant="fp16")),
        "llamacpp": lambda: llamacpp_runner(args.target, eos),
        "llamacpp_lookup": lambda: llamacpp_runner(args.target, eos, lookup=10),
    }
    dense_cache = {}

    def dense_target():
        if "m" not in dense_cache:
            dense_cache["m"] = dense(args.target, args.dtype)
        return dense_cache["m"]

    runners = {m: makers[m]() for m in methods}
    target = dense_cache.get("m")
    model_pair = tokenizer_pair
    prompts = {name: prompt_ids(model_pair.target.tokenizer, PROMPTS[name]) for name in args.prompts.split(",")}
    ceilings = {p: bandwidth_gb_s() * 1e9 / b for p, b in weight_bytes_per_token(model_pair.target).items()}
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
    return report(args, methods, prompts, rates, outputs, target, ceilings)


def reference_of(method: str) -> str:
    if method.startswith("llamacpp"):
        return "llamacpp"
    return "specx_fp16_none" if method.startswith("specx_fp16") else "hf_generate"


def report(args, methods, prompts, rates, outputs, target, ceilings) -> int:
    med = {m: {p: statistics.median(v) for p, v in rates[m].items()} for m in methods}
    overall = {m: statistics.median(list(med[m].values())) for m in methods}
    checks = {}
    for m in methods:
        for name, ids in prompts.items():
            ref = reference_of(m)
            if ref in methods and (ref, name) in outputs:
                same = outputs[(ref, name)] == outputs[(m, name)]
                if target is not None and ref == "hf_generate":
                    checks[(m, name)] = agreement(target, ids, outputs[(ref, name)], outputs[(m, name)])
                else:
                    checks[(m, name)] = ("same", None) if same else ("DIFFERS", None)
    header = "| method | " + " | ".join(prompts) + " | overall (median) |"
    lines = [header, "|" + "---|" * (len(prompts) + 2)]
    for m in methods:
        cells = [f"{med[m][p]:.2f}" + ("" if checks.get((m, p), ("same",))[0] == "same"
                                       else f" ({checks[(m, p)][0]})") for p in prompts]
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {overall[m]:.2f} |")
    ratio = lambda a, b: overall[a] / overall[b] if a in overall and b in overall else float("nan")  # noqa: E731
    best = max((m for m in methods if m.startswith("specx")), key=lambda m: overall[m], default=None)
    bars = [("specx_model / hf_assisted ≥ 1.0", ratio("specx_model", "hf_assisted"), 1.0),
            ("specx_none / hf_generate ≥ 0.95", ratio("specx_none", "hf_generate"), 0.95),
            ("specx_ngram / hf_lookup ≥ 1.0", ratio("specx_ngram", "hf_lookup"), 1.0),
            (f"best specx ({best}) / specx_none ≥ 1.5", ratio(best, "specx_none"), 1.5),
            (f"best specx ({best}) / hf_assisted ≥ 2.0", ratio(best, "hf_assisted"), 2.0),
            (f"best specx ({best}) / llamacpp ≥ 1.0 (goal)", ratio(best, "llamacpp"), 1.0)]
    print(f"\n{args.dtype}, greedy, {args.new_tokens} new tokens, {args.repeats} repeats, tok/s medians "
          f"(end to end, prefill included); specx k={args.k} (model), k={args.ngram_k} (ngram), "
          f"--draft-policy {args.policy}\n")
    print("\n".join(lines))
    print("\nbandwidth-bound ceiling (linear weight bytes per token ÷ measured read bandwidth): " +
          ", ".join(f"{p} {c:.1f} tok/s" for p, c in ceilings.items()))
    print()
    for text, value, bar in bars:
        print(f"- {text}: {value:.2f} {'ok' if value >= bar else 'MISSED'}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps({
            "dtype": args.dtype, "new_tokens": args.new_tokens, "repeats": args.repeats, "k": args.k,
            "ngram_k": args.ngram_k, "tok_s": rates, "median": med, "overall": overall,
            "agreement": {f"{m}/{p}": v for (m, p), v in checks.items()}, "ceilings_tok_s": ceilings}, indent=1))
    return 1 if any(v[0] == "DIFFERS" for v in checks.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
