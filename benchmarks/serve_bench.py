#!/usr/bin/env python3
"""Served speed against the Python API (what `specx run` runs) on the same prompts, alternating.

`specx serve MODEL` runs as a child process (the server as users run it: its own process, its own
threads); the API runs here on the same model and options. Per prompt and repeat, one API answer and
one streamed chat answer, in alternating order, greedy, the same max_tokens:
- tok/s: completion tokens / wall time from the request to the last byte (API: from the call to Done);
- first token: the API's time to its first text; the server's time to the first streamed byte and to
  the first byte of text, from sending the request.
The issue's bars: served tok/s ≥ 0.95× the API's (median of the per-pair ratios); first streamed text
≤ the API's first-token time + 50 ms. Usage:
  python benchmarks/serve_bench.py [MODEL] [--repeats 3] [--max-tokens 128] [--json OUT]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PROMPTS = ["Explain speculative decoding in two sentences.",
           "Write a Python function that reverses a linked list.",
           "Repeat this list exactly: apples, pears, plums, figs, dates, limes, kiwis, grapes.",
           "Name five rivers of Europe and one fact about each."]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "specx", "serve", model, "--port", str(port)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    while True:
        line = proc.stderr.readline().decode()
        if not line:
            raise SystemExit("specx serve exited before it listened")
        if line.startswith("try: curl"):
            return proc


def served(port: int, model: str, prompt: str, max_tokens: int) -> dict:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": max_tokens, "stream": True})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    first_byte = first_text = None
    text, final = [], None
    while line := response.readline():
        first_byte = first_byte or time.perf_counter() - t0
        if not line.startswith(b"data: {"):
            continue
        chunk = json.loads(line[6:])
        piece = chunk["choices"][0]["delta"].get("content") if chunk["choices"] else None
        if piece:
            first_text = first_text or time.perf_counter() - t0
            text.append(piece)
        if "usage" in chunk:
            final = chunk
    wall = time.perf_counter() - t0
    conn.close()
    tokens = final["usage"]["completion_tokens"]
    return {"text": "".join(text), "tokens": tokens, "wall_s": wall, "tok_s": tokens / wall,
            "first_byte_s": first_byte, "first_text_s": first_text}


def api(pair, prompt: str, max_tokens: int) -> dict:
    from specx.api import stream
    from specx.engine.types import Done
    from specx.options import RunOptions

    t0 = time.perf_counter()
    first, text = None, []
    for event in stream(pair, prompt, RunOptions(max_tokens=max_tokens)):
        if isinstance(event, Done):
            stats = event.stats
        elif event.text:
            first = first or time.perf_counter() - t0
            text.append(event.text)
    wall = time.perf_counter() - t0
    return {"text": "".join(text), "tokens": stats.new_tokens, "wall_s": wall, "tok_s": stats.new_tokens / wall,
            "first_text_s": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?",
                        default=str(Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models"))
                                    .expanduser() / "smollm2-135m.gguf"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from specx.api import prepare
    from specx.options import from_keywords

    pair = prepare(from_keywords(args.model).model)
    port = free_port()
    proc = start_server(args.model, port)
    rows = []
    try:
        for prompt in PROMPTS:   # one warm-up each side
            api(pair, prompt, 8), served(port, args.model, prompt, 8)
        for repeat in range(args.repeats):
            for i, prompt in enumerate(PROMPTS):
                order = ("api", "served") if (repeat + i) % 2 == 0 else ("served", "api")
                got = {side: api(pair, prompt, args.max_tokens) if side == "api" else
                       served(port, args.model, prompt, args.max_tokens) for side in order}
                rows.append({"prompt": i, "repeat": repeat, "order": order, **got,
                             "same_text": got["api"]["text"] == got["served"]["text"]})
                print(f"prompt {i} repeat {repeat}: api {got['api']['tok_s']:.1f} tok/s, served "
                      f"{got['served']['tok_s']:.1f} tok/s; first text api {got['api']['first_text_s'] * 1e3:.0f} ms, "
                      f"served byte {got['served']['first_byte_s'] * 1e3:.0f} ms / text "
                      f"{got['served']['first_text_s'] * 1e3:.0f} ms; same text {rows[-1]['same_text']}", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    summary = summarize(rows)
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


def summarize(rows: list[dict]) -> dict:
    ratio = [r["served"]["tok_s"] / r["api"]["tok_s"] for r in rows]
    extra_text = [(r["served"]["first_text_s"] - r["api"]["first_text_s"]) * 1e3 for r in rows]
    extra_byte = [(r["served"]["first_byte_s"] - r["api"]["first_text_s"]) * 1e3 for r in rows]
    return {"pairs": len(rows), "median_api_tok_s": statistics.median(r["api"]["tok_s"] for r in rows),
            "median_served_tok_s": statistics.median(r["served"]["tok_s"] for r in rows),
            "median_ratio": statistics.median(ratio), "min_ratio": min(ratio), "max_ratio": max(ratio),
            "median_first_text_extra_ms": statistics.median(extra_text),
            "median_first_byte_extra_ms": statistics.median(extra_byte),
            "same_text": sum(r["same_text"] for r in rows)}


if __name__ == "__main__":
    main()
