"""Turn samples into per-category and overall rows: medians with bootstrap intervals, pooled rates."""
from __future__ import annotations

import csv
import io
import statistics
import time

from .runner import BASELINE, Measurements, Sample
from .stats import bootstrap_median, paired_ratios
from .suite import categories

SCHEMA_VERSION = 1
OVERALL = "overall"
CSV_COLUMNS = ("config", "category", "precision", "samples", "tok_s", "tok_s_lo", "tok_s_hi", "speedup",
               "speedup_lo", "speedup_hi", "decode_tok_s", "decode_speedup", "acceptance_rate", "mean_acceptance_length", "ttft_s", "draft_s",
               "verify_s", "peak_bytes", "weights_bytes", "outputs_matched", "outputs_compared")


def summarise(m: Measurements, greedy: bool = True, level: float = 0.9) -> list[dict]:
    """One row per configuration and category (then `overall`), over the complete units only."""
    units = m.complete_units()
    used = [s for s in m.samples if (s.repeat, s.prompt) in units]
    base = {(s.repeat, s.prompt): s for s in used if s.config == BASELINE.label}
    rows = []
    for category in categories(m.prompts) + [OVERALL]:
        for c in m.configs:
            mine = [s for s in used if s.config == c.label and category in (OVERALL, s.category)]
            if mine:
                rows.append(_row(c.label, category, mine, base, greedy, level,
                                 m.precision.get(c.label, ""), m.weights_bytes.get(c.label, 0)))
    return rows


def _row(label: str, category: str, mine: list[Sample], base: dict, greedy: bool, level: float,
         precision: str, weights: int) -> dict:
    tok_s = {(s.repeat, s.prompt): s.tok_s for s in mine}
    base_tok_s = {u: b.tok_s for u, b in base.items()}
    ratios = paired_ratios(tok_s, base_tok_s)
    decode = {(s.repeat, s.prompt): s.decode_tok_s for s in mine if s.decode_tok_s}
    decode_ratios = paired_ratios(decode, {u: b.decode_tok_s for u, b in base.items() if b.decode_tok_s})
    drafted, accepted, rounds = (sum(getattr(s, f) for s in mine) for f in ("drafted", "accepted", "rounds"))
    ttfts = [s.ttft_s for s in mine if s.ttft_s is not None]
    matched = sum(s.tokens == base[(s.repeat, s.prompt)].tokens for s in mine) if greedy else None
    return {
        "config": label, "category": category, "precision": precision, "samples": len(mine),
        "tok_s": bootstrap_median(list(tok_s.values()), level).as_dict(),
        "speedup": bootstrap_median(ratios, level).as_dict() if ratios else None,
        "decode_tok_s": bootstrap_median(list(decode.values()), level).as_dict() if decode else None,
        "decode_speedup": bootstrap_median(decode_ratios, level).as_dict() if decode_ratios else None,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "mean_acceptance_length": round(1 + accepted / rounds, 4) if rounds and drafted else None,
        "per_position_acceptance": per_position(mine),
        "ttft_s": bootstrap_median(ttfts, level).as_dict() if ttfts else None,
        "draft_s": round(statistics.median(s.draft_s for s in mine), 4),
        "verify_s": round(statistics.median(s.verify_s for s in mine), 4),
        "peak_bytes": max(s.peak_bytes for s in mine), "weights_bytes": weights,
        "outputs_matched": matched, "outputs_compared": len(mine) if greedy else None,
    }


def per_position(samples: list[Sample]) -> list[float]:
    """Pooled acceptance at each draft position: rounds that accepted draft i / rounds that proposed it."""
    width = max((len(s.drafted_at) for s in samples), default=0)
    acc, dra = [0] * width, [0] * width
    for s in samples:
        for i, (a, d) in enumerate(zip(s.accepted_at, s.drafted_at)):
            acc[i] += a
            dra[i] += d
    return [round(a / d, 4) if d else 0.0 for a, d in zip(acc, dra)]


def document(m: Measurements, rows: list[dict], settings: dict, environment: dict) -> dict:
    """The saved result: settings, environment, configurations, rows and every raw sample."""
    return {
        "version": SCHEMA_VERSION, "kind": "specx-bench",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": settings, "environment": environment,
        "configs": [{**c.as_dict(), "precision": m.precision.get(c.label, ""),
                     "weights_bytes": m.weights_bytes.get(c.label, 0)} for c in m.configs],
        "prompts": [{"name": p.name, "category": p.category} for p in m.prompts],
        "complete_units": len(m.complete_units()), "interrupted": m.interrupted,
        "rows": rows, "samples": [s.as_dict() for s in m.samples],
    }


def csv_text(rows: list[dict]) -> str:
    """The rows flattened to CSV_COLUMNS (intervals become value, lo, hi)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        flat = {k: r.get(k) for k in CSV_COLUMNS if not isinstance(r.get(k), dict)}
        for key in ("tok_s", "speedup"):
            iv = r.get(key) or {}
            flat[key], flat[f"{key}_lo"], flat[f"{key}_hi"] = iv.get("median"), iv.get("lo"), iv.get("hi")
        for key in ("ttft_s", "decode_tok_s", "decode_speedup"):
            flat[key] = (r.get(key) or {}).get("median")
        writer.writerow({k: "" if v is None else v for k, v in flat.items()})
    return out.getvalue()


def compare(a: dict, b: dict) -> dict:
    """What changed from result A to result B: rows matched by configuration and category."""
    index = {(r["config"], r["category"]): r for r in a["rows"]}
    rows = []
    for r in b["rows"]:
        old = index.get((r["config"], r["category"]))
        if old is None:
            continue
        ta, tb = old["tok_s"]["median"], r["tok_s"]["median"]
        rows.append({"config": r["config"], "category": r["category"], "tok_s_a": ta, "tok_s_b": tb,
                     "change": round(tb / ta - 1, 4) if ta else None,
                     "speedup_a": (old.get("speedup") or {}).get("median"),
                     "speedup_b": (r.get("speedup") or {}).get("median"),
                     "acceptance_a": old.get("acceptance_rate"), "acceptance_b": r.get("acceptance_rate")})
    return {"a": a.get("created"), "b": b.get("created"), "rows": rows,
            "only_a": sorted({f"{c} / {g}" for c, g in index} - {f"{r['config']} / {r['category']}" for r in b["rows"]}),
            "environment": env_diff(a.get("environment", {}), b.get("environment", {})),
            "settings": env_diff(a.get("settings", {}), b.get("settings", {}))}


def env_diff(a: dict, b: dict, prefix: str = "") -> list[dict]:
    """Leaves that differ between two nested dicts, as {key, a, b}."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += env_diff(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append({"key": prefix + key, "a": va, "b": vb})
    return out
