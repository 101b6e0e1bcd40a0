"""`--plot FILE.png`: speedup per category, and acceptance by draft position (matplotlib, the `bench` extra)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import SpecxError, UsageError
from .report import OVERALL


def check_available(dest: str) -> None:
    """Before any measuring: matplotlib is installed and the file name ends in .png."""
    if not dest.lower().endswith(".png"):
        raise UsageError(f"--plot writes a PNG file (got {dest})", "give a file name ending in .png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SpecxError("--plot needs matplotlib, which is not installed",
                         "pip install 'specx[bench]' (or pip install matplotlib)") from None


def plot(doc: dict, dest: str) -> Path:
    """Two panels in one PNG, written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["rows"] if r["speedup"] is not None]
    cats = list(dict.fromkeys(r["category"] for r in rows))
    configs = [c["label"] for c in doc["configs"] if not c["baseline"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / max(len(configs), 1)
    for i, label in enumerate(configs):
        mine = {r["category"]: r["speedup"] for r in rows if r["config"] == label}
        xs = [j + i * width for j, c in enumerate(cats) if c in mine]
        med = [mine[c]["median"] for c in cats if c in mine]
        err = [[mine[c]["median"] - mine[c]["lo"] for c in cats if c in mine],
               [mine[c]["hi"] - mine[c]["median"] for c in cats if c in mine]]
        left.bar(xs, med, width, yerr=err, capsize=2, label=label)
        acc = next((r["per_position_acceptance"] for r in doc["rows"]
                    if r["config"] == label and r["category"] == OVERALL), [])
        if acc:
            right.plot(range(1, len(acc) + 1), acc, marker="o", label=label)
    left.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    left.set_xticks([j + width * (len(configs) - 1) / 2 for j in range(len(cats))], cats)
    left.set_ylabel("speedup vs --drafter none (median, 90% CI)")
    left.set_title("Speedup per category")
    left.legend(fontsize=7, loc="best")
    right.set_xlabel("draft position")
    right.set_ylabel("acceptance rate")
    right.set_ylim(0, 1.05)
    width_max = max((len(line.get_xdata()) for line in right.lines), default=0)
    right.set_xticks(range(1, width_max + 1))
    right.set_title("Acceptance by draft position (overall)")
    if right.lines:
        right.legend(fontsize=7)
    fig.suptitle(f"{doc['settings']['model']} · {doc['settings']['mode']} · {doc['created']}", fontsize=9)
    fig.tight_layout()
    dest_path, tmp = Path(dest).expanduser(), None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest_path.name}.", suffix=".png", dir=dest_path.parent)
        os.close(fd)
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, dest_path)
    except OSError as e:
        raise SpecxError(f"cannot write {dest_path}: {e.strerror or e}", "check the folder is writable") from None
    finally:
        plt.close(fig)
        if tmp:
            Path(tmp).unlink(missing_ok=True)
    return dest_path
