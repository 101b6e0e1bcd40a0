"""The issue-7 benchmark bars from the results of benchmarks/bars.sh, as Markdown tables and verdicts.

Usage: python benchmarks/bars_report.py OUT_DIR   (reads fp32.json and, when present, fp16.json
there; the output of bars.sh or of bars_drafters.sh)

Every comparison is a paired ratio per (repeat, prompt) unit, measured back to back in one process;
medians with 90% percentile-bootstrap intervals (specx.bench.stats)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from specx.bench.stats import bootstrap_median

AUTO_FLOOR = 0.97


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def tok_s(doc: dict, label: str, category: str | None = None) -> dict:
    return {(s["repeat"], s["prompt"]): s["tok_s"] for s in doc["samples"]
            if s["config"] == label and (category is None or s["category"] == category)}


def ratio(doc: dict, a: str, b: str, category: str | None = None):
    ta, tb = tok_s(doc, a, category), tok_s(doc, b, category)
    values = [ta[u] / tb[u] for u in ta if u in tb and tb[u] > 0]
    return bootstrap_median(values) if values else None


def fmt(iv) -> str:
    return "–" if iv is None else f"{iv.median:.2f}× [{iv.lo:.2f}–{iv.hi:.2f}]"


def table(doc: dict) -> str:
    cats = [c for c in dict.fromkeys(p["category"] for p in doc["prompts"])] + ["overall"]
    rows = {(r["config"], r["category"]): r for r in doc["rows"]}
    out = ["| configuration | " + " | ".join(cats) + " |", "|---|" + "---|" * len(cats)]
    for c in doc["configs"]:
        cells = []
        for cat in cats:
            r = rows.get((c["label"], cat))
            if r is None:
                cells.append("–")
                continue
            t, sp = r["tok_s"], r["speedup"]
            cell = f"{t['median']:.2f} [{t['lo']:.2f}–{t['hi']:.2f}]"
            if sp and not c["baseline"]:
                cell += f" · {sp['median']:.2f}×"
            cells.append(cell)
        out.append(f"| {c['label']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def bars(fp16: dict | None, fp32: dict) -> list[str]:
    """The verdicts; fp16 may be missing (a run of the float32 half only)."""
    labels = [c["label"] for c in fp16["configs"]] if fp16 else []
    out = []
    fixed = [l for l in labels if l.endswith(" fixed") and not l.startswith("ngram")]
    if fixed:   # bars.sh: tuned and policy rows; bars_drafters.sh has none
        out += policy_bars(fp16, labels, fixed)
    for doc, name, need in ((fp32, "float32", 1.5), (fp16, "fp16", 2.0)):
        if doc is None:
            continue
        for l in [x["label"] for x in doc["configs"] if x["label"].startswith("ngram")]:
            r = ratio(doc, l, "none", "rewrite")
            row = next(x for x in doc["rows"] if x["config"] == l and x["category"] == "rewrite")
            dec = row.get("decode_speedup") or {}
            out.append(f"{l} / none on rewrite ({name}): {fmt(r)}; decode only {dec.get('median', 0):.2f}× "
                       f"[{dec.get('lo', 0):.2f}–{dec.get('hi', 0):.2f}] → "
                       f"{'pass' if r and r.median >= need else 'not ≥ ' + str(need)} (end to end)")
    peers = {"hf-assisted": "transformers assisted on specx's weights and kernels",
             "hf-stock-assisted": "transformers assisted as transformers loads the models"}
    for peer, what in peers.items():
        if any(c["label"] == peer for c in fp32["configs"]):
            for l in [c["label"] for c in fp32["configs"] if not c["baseline"] and not c.get("peer")]:
                r = ratio(fp32, l, peer)
                out.append(f"{l} / {what} (float32), overall: {fmt(r)} → "
                           f"{'pass' if r and r.median >= 1.2 else 'not ≥ 1.2'}")
    for doc, name in ((fp16, "fp16"), (fp32, "float32")):
        if doc is None:
            continue
        cats = list(dict.fromkeys(p["category"] for p in doc["prompts"]))
        for l in [c["label"] for c in doc["configs"] if c["label"].endswith(" auto")]:
            worst = min(((ratio(doc, l, "none", cat), cat) for cat in cats), key=lambda x: x[0].median)
            out.append(f"{l} / none, worst category ({name}): {worst[1]} {fmt(worst[0])} → "
                       f"{'pass' if worst[0].median >= AUTO_FLOOR else 'FAIL'} (≥ {AUTO_FLOOR})")
    return out


def policy_bars(fp16: dict, labels: list[str], fixed: list[str]) -> list[str]:
    out = []
    best = max(fixed, key=lambda l: sorted(tok_s(fp16, l).values())[len(tok_s(fp16, l)) // 2])
    tuned = fp16["settings"].get("tuned")
    if tuned:
        r = ratio(fp16, tuned, best)
        out.append(f"tuned ({tuned}) / best fixed k ({best}), overall: {fmt(r)} → "
                   f"{'pass' if r and r.median >= 0.97 else 'FAIL'} (≥ 0.97)")
    k4 = next(l for l in fixed if " k=4 " in l)
    for l in labels:
        if l.endswith(("heuristic",)) or "confidence" in l:
            r = ratio(fp16, l, k4)
            out.append(f"{l} / {k4}, overall: {fmt(r)} → {'pass' if r and r.median >= 1 else 'not ≥ 1'}")
    return out


def main(folder: str) -> None:
    d = Path(folder)
    fp16 = load(d / "fp16.json") if (d / "fp16.json").exists() else None
    fp32 = load(d / "fp32.json")
    for doc, title in ((fp16, "fp16 target weights"), (fp32, "float32")):
        if doc is None:
            continue
        print(f"### {title}: tok/s median [90% CI] · speedup vs none\n")
        print(table(doc) + "\n")
    print("### Bars\n")
    for line in bars(fp16, fp32):
        print(f"- {line}")


if __name__ == "__main__":
    main(sys.argv[1])
