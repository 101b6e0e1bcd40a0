"""Saved benchmark results: the environment they ran in, atomic files under the user data dir."""
from __future__ import annotations

import json
import platform
import re
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ..state.atomicio import atomic_write
from ..errors import SpecxError, UsageError
from ..state.paths import data_dir

PACKAGES = ("specx", "torch", "transformers", "accelerate", "tokenizers", "safetensors", "gguf")


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def environment(device: str = "cpu") -> dict:
    """Versions, device and threads: what a result depends on besides the models."""
    import torch

    from ..state.machine import cpu_flags, identity

    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "packages": {name: _version(name) for name in PACKAGES}, "device": identity(device),
            "torch_threads": torch.get_num_threads(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_flags": [f for f, on in cpu_flags().items() if on]}


def results_dir() -> Path:
    return data_dir() / "bench"


def save(doc: dict, model: str) -> Path:
    """Write the result as <UTC time>-<model>.json in the results folder; returns its path."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(model).stem or model).strip("-")[:40] or "model"
    dest = results_dir() / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{slug}.json"
    n = 1
    while dest.exists():
        n += 1
        dest = dest.with_name(f"{dest.stem.rsplit('.', 1)[0]}.{n}.json")
    write(dest, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return dest


def write(dest: Path, text: str) -> None:
    """Atomically, with one clear error when the folder cannot take it."""
    try:
        atomic_write(Path(dest), text)
    except OSError as e:
        raise SpecxError(f"cannot write {dest}: {e.strerror or e}", "check the folder exists and is writable") from None


def load(path: str) -> dict:
    """A saved result for --compare, checked to be one."""
    p = Path(path).expanduser()
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"result file not found: {p}",
                         f"saved results are in {results_dir()}") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {p} as a specx bench result: {e}", "give a JSON file `specx bench` wrote") from None
    if not isinstance(doc, dict) or doc.get("kind") != "specx-bench" or not isinstance(doc.get("rows"), list):
        raise UsageError(f"{p} is not a specx bench result", "give a JSON file `specx bench` wrote")
    return doc
