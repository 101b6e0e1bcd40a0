"""`specx tune`: which configurations to try, and which one won."""
from __future__ import annotations

import time

from ..policy.policy import AUTO_K_MAX
from ..policy.tuned import TunedSetting
from .report import OVERALL
from .runner import Config

KS = tuple(range(1, 9))
THRESHOLDS = (0.3, 0.5, 0.7)
HEURISTIC_START = 4
TREES = (8, -1)   # token trees tried under auto at its default cap: 8 nodes, and sized by measured costs


def candidates(drafter: str, ks: tuple[int, ...] = KS, trees: tuple[int, ...] = TREES) -> list[Config]:
    """fixed k for every k, heuristic from k=4, auto (cost-model k, 0 when drafting does not pay) up to
    4, up to the largest k and up to its own default cap (what `specx run` does when k is not set),
    the last with token trees of each width in `trees`, and (model drafters only) confidence at a few
    thresholds. (A target that verifies chains only runs the tree rows as chains.)"""
    if drafter == "none":
        return []
    out = [Config(drafter, k, "fixed") for k in ks]
    out.append(Config(drafter, HEURISTIC_START, "heuristic"))
    out += [Config(drafter, k, "auto") for k in sorted({min(4, max(ks)), max(ks), AUTO_K_MAX})]
    out += [Config(drafter, AUTO_K_MAX, "auto", tree=t) for t in trees]
    if drafter != "ngram":   # the n-gram drafter has no probabilities to be confident about
        out += [Config(drafter, max(ks), "confidence", t) for t in THRESHOLDS]
    return out


def trials(rows: list[dict], configs: list[Config]) -> list[dict]:
    """Each configuration's overall result, fastest first."""
    by_label = {c.label: c for c in configs}
    out = []
    for r in rows:
        if r["category"] != OVERALL or r["config"] not in by_label:
            continue
        c = by_label[r["config"]]
        out.append({**c.as_dict(), "tok_s": r["tok_s"]["median"],
                    "speedup": (r["speedup"] or {}).get("median"), "speedup_lo": (r["speedup"] or {}).get("lo"),
                    "acceptance_rate": r["acceptance_rate"], "samples": r["samples"]})
    return sorted(out, key=lambda t: (t["speedup"] or 0, t["tok_s"]), reverse=True)


def choose(trial_list: list[dict], drafter_ref: str, complete: bool = True) -> TunedSetting | None:
    """The best measured configuration; "speculation off" when none beats the baseline; None without data."""
    base = next((t for t in trial_list if t["baseline"]), None)
    if base is None:
        return None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    best = next((t for t in trial_list if not t["baseline"]), None)
    if best is None or (best["speedup"] or 0) <= 1.0:
        return TunedSetting("none", 0, "fixed", tok_s=base["tok_s"], baseline_tok_s=base["tok_s"], speedup=1.0,
                            tuned_at=stamp, complete=complete)
    return TunedSetting(drafter_ref, best["k"], best["policy"], best["confidence"], tok_s=best["tok_s"],
                        baseline_tok_s=base["tok_s"], speedup=best["speedup"], tuned_at=stamp, complete=complete,
                        tree=best.get("tree", 0))
