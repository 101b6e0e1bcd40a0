"""Costs measured by earlier runs, so that `auto` drafts at once in a one-shot `specx run` (no warm-up).

A loaded pair carries what one answer measured into the next (`CostModel.following`); this file
carries it across processes: the target's verify time per forward size, the drafter's step and its
confidence calibration, per model pair, machine, precision and kind of sampling. Without it every new
process spends its first drafting round on a short warm-up draft (benchmarks/results/2026-11-24-measured).
What was learned of a text (acceptance) is never kept.

`measured.json` lives in the user state dir; writers lock, merge and replace it atomically; it is a
cache: an unreadable file or entry reads as nothing, a failed write is skipped, and deleting the file
only brings the warm-up back. Measurements found here still move with every round of the new run.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from .acceptance import Calibration
from .costmodel import CostModel
from ..state.paths import state_dir

FILE, LOCK = "measured.json", "measured.json.lock"
VERSION = 1
MAX_ENTRIES = 64          # pairs kept; the least recently saved go first
CALIBRATION_CAP = 500.0   # judged tokens kept per confidence bin: later runs still move the estimate


def path() -> Path:
    return state_dir() / FILE


def identity(source_path: Path) -> str:
    """A model file or folder as this cache tells it apart: path, sizes and modification times."""
    p = Path(source_path).resolve()
    files = [p] if p.is_file() else sorted(f for f in p.glob("*") if f.suffix in (".json", ".safetensors", ".bin"))
    stamps = ",".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files if f.exists())
    return f"{p}|{stamps}"


def make_key(target, target_path: Path, drafter_label: str, drafter_lm=None, drafter_path: Path | None = None) -> dict:
    """What measured costs depend on: both models, their precisions and kernels, where they live, the
    machine (processor and threads, or the GPU)."""
    from ..state import machine

    device = target.device
    key = {"target": identity(target_path), "target_kernels": _kernels(target),
           "placement": target.placement, "device": machine.identity(str(device)), "drafter": drafter_label}
    if drafter_lm is not None and drafter_path is not None:
        from ..decoder.vocabtrim import rows

        key["drafter"] = f"{identity(drafter_path)}|{drafter_label}"
        key["drafter_kernels"] = f"{_kernels(drafter_lm)}; output rows {rows(drafter_lm)}"
    return key


def _kernels(lm) -> str:
    """A model's dtype and kernels; for specx's own kernel also its build: a new build (a release's)
    changes every forward's cost, and a size its answers rarely time would keep the old cost for good."""
    kernels = f"{lm.model.dtype}; {lm.kernels}"
    if "rowgemm" in lm.kernels:
        from ..cpu import rowgemm

        kernels += f"; rowgemm build {rowgemm.build_id()}"
    return kernels


def load(key: dict, greedy: bool) -> CostModel | None:
    """The costs saved for this key and kind of sampling, or None."""
    return load_with_note(key, greedy)[0]


def load_with_note(key: dict, greedy: bool) -> tuple[CostModel | None, str]:
    """The saved costs and one sentence saying what `auto` starts from, or (None, "")."""
    entry = next((e for e in _entries() if e.get("key") == key), None)
    data = entry.get("greedy" if greedy else "sampling") if entry else None
    if not isinstance(data, dict):
        return None, ""
    try:
        cost = CostModel(verify_s={int(n): float(s) for n, s in data["verify_s"].items()},
                         draft_step_s=None if data.get("draft_step_s") is None else float(data["draft_step_s"]),
                         calibration=_calibration(data.get("calibration", {})))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None, ""
    if not cost.verify_s.get(1) or not _sane(cost):
        return None, ""
    step = f", a drafted token {1e3 * cost.draft_step_s:.0f} ms" if cost.draft_step_s else ""
    return cost, (f"draft policy auto starts from costs an earlier run measured on this machine "
                  f"({str(entry.get('saved', ''))[:10] or 'undated'}: plain decoding {1e3 * cost.verify_s[1]:.0f} ms "
                  f"per token{step}), so it drafts at once, with no warm-up draft; delete {path()} to measure afresh")


def save(key: dict, greedy: bool, cost: CostModel) -> bool:
    """Merge this kind of sampling's costs into the key's entry; False where the state dir refuses."""
    from ..state.atomicio import atomic_write, locked

    if not cost.verify_s.get(1):
        return False      # nothing a later run could start from
    data = {"verify_s": {str(n): s for n, s in sorted(cost.verify_s.items())}, "draft_step_s": cost.draft_step_s,
            "calibration": _capped(cost.calibration)}
    try:
        with locked(state_dir() / LOCK):
            entries = _entries()
            entry = next((e for e in entries if e.get("key") == key), {"key": key})
            entry["greedy" if greedy else "sampling"] = data
            entry["saved"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            rest = sorted((e for e in entries if e is not entry), key=lambda e: str(e.get("saved", "")))
            kept = rest[-(MAX_ENTRIES - 1):] + [entry]
            atomic_write(path(), json.dumps({"version": VERSION, "entries": kept}, indent=1) + "\n")
    except OSError:
        return False
    return True


def _sane(cost: CostModel) -> bool:
    """Times positive and finite, calibration counts finite and ≥ 0 (a NaN would poison every choice)."""
    times = list(cost.verify_s.values()) + ([cost.draft_step_s] if cost.draft_step_s is not None else [])
    counts = list(cost.calibration.judged.values()) + list(cost.calibration.passed.values())
    return all(0 < t < math.inf for t in times) and all(0 <= c < math.inf for c in counts)


def _entries() -> list[dict]:
    from ..state.atomicio import read_entries

    return read_entries(path(), VERSION)


def _capped(calibration: Calibration) -> dict:
    """Per bin: judged and passed, scaled down to CALIBRATION_CAP judged tokens at most."""
    out = {}
    for b, judged in calibration.judged.items():
        scale = min(1.0, CALIBRATION_CAP / judged) if judged else 1.0
        out[str(b)] = [judged * scale, calibration.passed.get(b, 0.0) * scale]
    return out


def _calibration(data: dict) -> Calibration:
    calibration = Calibration()
    for b, (judged, passed) in data.items():
        calibration.judged[int(b)], calibration.passed[int(b)] = float(judged), float(passed)
    return calibration
