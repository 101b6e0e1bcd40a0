"""`specx env`: what a bug report needs (versions, devices, CPU features, directories, token presence)."""
from __future__ import annotations

import json
import os
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer

from ..state.machine import cpu_flags
from . import app

PACKAGES = ("specx", "torch", "transformers", "accelerate", "bitsandbytes", "huggingface-hub", "gguf",
            "tokenizers", "safetensors", "typer", "rich")


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def memory_available() -> dict[str, int | None]:
    """Host memory and the cgroup limit (a container's real ceiling), in bytes."""
    out: dict[str, int | None] = {"total": None, "available": None, "cgroup_limit": None}
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
        out["total"] = int(info["MemTotal"].split()[0]) * 1024
        out["available"] = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        pass
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < (1 << 60):
            out["cgroup_limit"] = int(text)
        break
    return out


def token_presence() -> str:
    """Whether an HF token is configured, and where; never its value."""
    if os.environ.get("HF_TOKEN"):
        return "set (HF_TOKEN)"
    hf_home = Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()
    return "set (token file)" if (hf_home / "token").is_file() else "not set"


def devices() -> list[dict]:
    """The CPU, plus every CUDA device with free and total memory."""
    import torch

    out = [{"device": "cpu", "threads": torch.get_num_threads(), "cores": os.cpu_count(),
            "capability": torch.backends.cpu.get_cpu_capability(), **memory_available()}]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            free, total = torch.cuda.mem_get_info(i)
            out.append({"device": f"cuda:{i}", "name": torch.cuda.get_device_name(i), "free": free, "total": total})
    return out


def collect() -> dict:
    from ..state import paths

    return {
        "python": sys.version.split()[0], "platform": platform.platform(),
        "packages": {name: _version(name) for name in PACKAGES},
        "devices": devices(), "cpu_flags": cpu_flags(),
        "dirs": {"config": str(paths.config_dir()), "data": str(paths.data_dir()),
                 "state": str(paths.state_dir()), "model_cache": str(paths.model_cache())},
        "hf_token": token_presence(),
        "kernels": kernels(),
    }


def kernels() -> str:
    """specx's CPU kernels: the GGUF block kernels and attention of the lean decoder, the float32 kernel
    of transformers' models; built, and what each timed choice measured here."""
    from ..cpu import rowgemm
    from ..cpu import fastpath

    from ..cpu import attention, layers, quant

    gguf = f"{quant.describe(detail=True)}; {attention.describe()}, {layers.describe()}"
    if not rowgemm.available():
        return f"{gguf}; specx rowgemm off: {rowgemm.why_not()}"
    fp16 = fastpath.fp16_choice()
    return (f"{gguf}; specx rowgemm (build {rowgemm.build_id()}); {rowgemm.prefetching().sentence()}"
            + (f"; {fp16.sentence()}" if fp16 else ""))


def _gib(n) -> str:
    return "?" if n is None else f"{n / 2**30:.1f} GiB"


@app.command(epilog="\b\nExamples:\n  specx env\n  specx env --json | jq .packages")
def env(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Versions, devices, CPU features and directories, for bug reports."""
    info = collect()
    if json_out:
        sys.stdout.write(json.dumps(info, indent=1) + "\n")
        return
    lines = [f"{'python':<16}{info['python']} on {info['platform']}"]
    lines += [f"{name:<16}{v or 'not installed'}" for name, v in info["packages"].items()]
    for d in info["devices"]:
        if d["device"] == "cpu":
            limit = f", cgroup limit {_gib(d['cgroup_limit'])}" if d["cgroup_limit"] else ""
            lines.append(f"{'cpu':<16}{d['cores']} cores, torch threads {d['threads']}, {d['capability']}; "
                         f"memory {_gib(d['available'])} available of {_gib(d['total'])}{limit}")
        else:
            lines.append(f"{d['device']:<16}{d['name']}: {_gib(d['free'])} free of {_gib(d['total'])}")
    lines.append(f"{'cpu features':<16}" + " ".join(f for f, on in info["cpu_flags"].items() if on))
    lines += [f"{k.replace('_', ' ') + ' dir':<16}{v}" for k, v in info["dirs"].items()]
    lines.append(f"{'hf token':<16}{info['hf_token']}")
    lines.append(f"{'kernels':<16}{info['kernels']}")
    sys.stdout.write("\n".join(lines) + "\n")
