#!/usr/bin/env python3
"""Issue 35's CPU bars: specx on a GGUF file against llama.cpp on the same file, paired, per category.

    python benchmarks/cpu_bars.py [--repeats 5] [--tokens 128] [--prompts specx/bench/prompts.toml]
                                  [--per-category N] [--categories C,..]
                                  [--configs llamacpp,none,default] [--json out.json]

Configurations (greedy, the same prompt ids for all, built with the target's chat template):
  llamacpp  llama.cpp (llama-cpp-python) decoding the target GGUF plainly, in a process of its own (two
            OpenMP runtimes in one process slow each other), the same thread count;
  none      specx's plain decoding (`--drafter none`);
  default   specx's default setup for a preset with a drafter: the 0.5B GGUF drafter with copies
            (`--drafter DRAFTER.gguf+ngram`), draft policy auto;
  ngram     specx with the n-gram drafter alone;
  vocabN    the default setup with the drafter's output layer trimmed to N rows and the context's ids
            (`--draft-vocab N`, VocabTrim; vocab0: every row);
  NAME-cold any of the specx ones on a pair of its own whose every answer reads its whole prompt
            (`reuse=False`); without -cold an answer keeps the prefix its prompt shares with what the pair's
            caches hold (the chat template's system prompt), as llama-cpp-python keeps its own.
Configurations alternate inside every repeat (rotated order) so drift cancels. A time is end to end (the
prompt pass included, loading excluded); decode-only times are kept too. Every specx output is compared with
specx's plain output (lossless: must be equal), llama.cpp's with specx's plain output (agreement, reported).
Set SPECX_LLAMA_NO_EXTRA_BUFTS=1 where llama.cpp's AMX/repack buffers crash (an AMX machine under KVM), or
SPECX_LLAMA_PYTHON to a Python whose llama-cpp-python was built without AMX (its repacked kernels kept).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
HERE = Path(__file__).resolve().parent


class LlamaCpp:
    """llama.cpp in a child process: `generate(ids, n)` -> (tokens, seconds end to end, seconds to first token)."""

    def __init__(self, path: str, threads: int, ctx: int = 4096):
        python = os.environ.get("SPECX_LLAMA_PYTHON", sys.executable)   # a venv with another llama.cpp build
        self.proc = subprocess.Popen([python, __file__, "--llama-child", path, str(threads), str(ctx)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("llama.cpp did not start")

    def generate(self, ids: list[int], n: int, eos: list[int]):
        self.proc.stdin.write(json.dumps({"ids": ids, "n": n, "eos": eos}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply["tokens"], reply["total_s"], reply["first_s"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def llama_child(path: str, threads: int, ctx: int) -> None:
    import llama_cpp
    import llama_cpp.llama

    default = llama_cpp.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = not os.environ.get("SPECX_LLAMA_NO_EXTRA_BUFTS")
        return p

    llama_cpp.llama.llama_cpp.llama_model_default_params = params
    llm = llama_cpp.Llama(model_path=path, n_threads=threads, n_threads_batch=threads, n_ctx=ctx, n_batch=512,
                          verbose=False)
    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        eos, out, first = set(req["eos"]), [], None
        t = time.perf_counter()
        for token in llm.generate(req["ids"], top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0, reset=True):
            first = first or time.perf_counter() - t
            if token in eos or len(out) >= req["n"]:
                break
            out.append(int(token))
        print(json.dumps({"tokens": out, "total_s": time.perf_counter() - t, "first_s": first or 0.0}), flush=True)


def specx_runner(pair, policy: str, reuse: bool = True):
    import specx
    from specx.engine.types import Done, Round

    def go(prompt: str, n: int):
        tokens, stats = [], None
        t = time.perf_counter()
        for event in specx.stream(pair, prompt, max_tokens=n, draft_policy=policy, reuse=reuse):
            if isinstance(event, Round):
                tokens.extend(event.token_ids)
            elif isinstance(event, Done):
                stats = event.stats
        total = time.perf_counter() - t
        return tokens, total, stats
    return go


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--drafter", default=str(FIXTURES / "qwen2.5-coder-0.5b.gguf"))
    ap.add_argument("--prompts", default=str(HERE.parent / "specx" / "bench" / "prompts.toml"))
    ap.add_argument("--per-category", type=int, default=0, help="the first N prompts of each category (0: all)")
    ap.add_argument("--categories", default="", help="only these categories, comma-separated (empty: all)")
    ap.add_argument("--configs", default="llamacpp,none,default")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    import torch

    import specx
    from specx.api import prompt_ids

    prompts = tomllib.loads(Path(args.prompts).read_text(encoding="utf-8"))["prompt"]
    if args.categories:
        prompts = [p for p in prompts if p["category"] in args.categories.split(",")]
    if args.per_category:
        prompts = [p for p in prompts if sum(q["category"] == p["category"] for q in prompts[:prompts.index(p)])
                   < args.per_category]
    configs = args.configs.split(",")
    threads = torch.get_num_threads()
    print(f"threads {threads}; {len(prompts)} prompts x {args.repeats} repeats x {configs}; {args.tokens} tokens",
          file=sys.stderr, flush=True)
    t = time.perf_counter()
    pairs = {}
    for name in configs:
        base = name.removesuffix("-cold")
        if base == "none":
            pairs[name] = specx.load(args.target, "none")
        elif base == "default":
            pairs[name] = specx.load(args.target, f"{args.drafter}+ngram")
        elif base == "ngram":
            pairs[name] = specx.load(args.target, "ngram")
        elif base.startswith("vocab"):
            pairs[name] = specx.load(args.target, f"{args.drafter}+ngram", draft_vocab=int(base[5:]))
    print(f"specx loaded in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    any_pair = next(iter(pairs.values()))
    tokenizer, eos = any_pair.target.tokenizer, sorted(any_pair.target.eos_ids)
    runners = {name: specx_runner(pair, "fixed" if name.startswith("none") else "auto", not name.endswith("-cold"))
               for name, pair in pairs.items()}
    llama = LlamaCpp(args.target, threads) if "llamacpp" in configs else None
    samples = []
    try:
        for rep in range(args.repeats):
            for i, p in enumerate(prompts):
                ids = prompt_ids(tokenizer, p["text"])
                order = configs[(rep + i) % len(configs):] + configs[:(rep + i) % len(configs)]
                for name in order:
                    if name == "llamacpp":
                        tokens, total, first = llama.generate(ids, args.tokens, eos)
                        decode = total - first
                    else:
                        tokens, total, stats = runners[name](p["text"], args.tokens)
                        first, decode = stats.first_token_s or 0.0, stats.decode_s
                    samples.append({"config": name, "category": p["category"], "prompt": i, "rep": rep, "tokens": tokens,
                                    "total_s": total, "first_s": first, "decode_s": decode})
                    print(f"rep {rep} {p['category']:<14} {name:<9} {len(tokens):>4} tok {total:6.2f} s "
                          f"({len(tokens) / total:5.2f} tok/s)", file=sys.stderr, flush=True)
    finally:
        if llama:
            llama.close()
    report(samples, configs)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "threads": threads, "samples": samples}))
    return 0


def report(samples: list[dict], configs: list[str]) -> None:
    """Per category: tok/s medians, paired ratios against llama.cpp (and plain specx), output agreement."""
    from specx.bench.stats import bootstrap_median

    def key(s):
        return (s["category"], s["prompt"], s["rep"])

    by = {c: {key(s): s for s in samples if s["config"] == c} for c in configs}
    cats = sorted({s["category"] for s in samples}) + ["overall"]
    base = "llamacpp" if "llamacpp" in configs else "none"
    for time_key, what in (("total_s", "end to end"), ("decode_s", "decoding alone")):
        print(f"\n{what}: tok/s, and the paired ratio to {base} (median [90% bootstrap interval])")
        print("| config | " + " | ".join(cats) + " |")
        print("|---|" + "---|" * len(cats))
        for c in configs:
            cells = []
            for cat in cats:
                units = [u for u in by[c] if (cat == "overall" or u[0] == cat) and u in by[base]]
                rate = [len(by[c][u]["tokens"]) / max(by[c][u][time_key], 1e-9) for u in units]
                ratio = [r / (len(by[base][u]["tokens"]) / max(by[base][u][time_key], 1e-9)) for r, u in zip(rate, units)]
                r, q = bootstrap_median(rate), bootstrap_median(ratio)
                cells.append(f"{r.median:.2f}, {q.median:.2f}x [{q.lo:.2f}-{q.hi:.2f}]")
            print(f"| {c} | " + " | ".join(cells) + " |")
    if "none" in by:
        for c in configs:
            if c in ("none",):
                continue
            same = sum(by[c][u]["tokens"] == by["none"][u]["tokens"] for u in by[c] if u in by["none"])
            print(f"{c}: {same}/{len(by[c])} outputs equal to specx's plain decoding")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--llama-child"]:
        llama_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    sys.exit(main())
