"""`specx rm` and `specx verify`: delete or re-hash a downloaded model (HF cache or specx's own cache)."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ModelUnavailable
from . import EXIT_CODES, app, output
from .models_cmd import NAME, _gb


@app.command(epilog="\b\nExamples:\n  specx rm qwen2.5-coder-7b\n  specx rm qwen2.5-coder-7b --yes\n\n" + EXIT_CODES)
def rm(name: NAME, yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False) -> None:
    """Delete a downloaded model from the Hugging Face cache (or specx's own cache)."""
    from ..models import catalog, lock
    from ..errors import UsageError

    def confirm(what: str, size: int) -> None:
        if yes:
            return
        if not sys.stdin or not sys.stdin.isatty():
            raise UsageError(f"refusing to delete {what} without confirmation", "pass --yes")
        typer.confirm(f"delete {what} ({_gb(size)})?", abort=True, err=True)

    if name.startswith("converted/"):   # one of specx's converted copies, as `specx list` names them
        folders = _converted(name.removeprefix("converted/"))
        if not folders:
            raise ModelUnavailable(f"no converted copy named {name}", "`specx list` shows them")
        confirm(name, sum(_tree_size(f) for f in folders))
        output.note(f"removed {name}: {_gb(sum(_remove_tree(f) for f in folders))} freed")
        return
    entry = catalog.lookup(name)
    st = catalog.state(entry)
    if not st["pulled"]:
        raise ModelUnavailable(f"{entry.label} is not downloaded", "`specx list` shows what is")
    copies = _converted_copies_of(Path(st["path"])) if (st.get("path") or "").endswith(".gguf") else []
    confirm(entry.label, st["bytes"] + sum(_tree_size(f) for f in copies))
    freed = sum(_remove_tree(f) for f in copies) + _delete(entry, st)
    if entry.ref is not None:
        lock.forget(entry.key)
    output.note(f"removed {entry.label}{' and its converted copies' if copies else ''}: {_gb(freed)} freed")


HEX_PREFIX = re.compile(r"[0-9a-f]{8,16}")   # `specx list` names a copy by its GGUF's sha256, 16 hex digits


def _converted(prefix: str) -> list[Path]:
    """The converted copies whose name starts with this hex prefix: folders directly in `converted/`,
    never a pattern, a path or a symbolic link."""
    from ..errors import UsageError
    from ..state.paths import inside, model_cache

    if not HEX_PREFIX.fullmatch(prefix):
        raise UsageError(f"converted/{prefix} is not the name of a converted copy",
                         "give converted/ and 8 to 16 lower-case hex digits, as `specx list` shows them")
    root = model_cache() / "converted"
    found = sorted(p for p in root.iterdir() if p.name.startswith(prefix)) if root.is_dir() else []
    for p in found:
        if p.is_symlink():
            raise UsageError(f"{p} is a symbolic link: specx deletes only the folders it wrote",
                             f"remove the link yourself (`rm {p}`)")
        inside(p, root)
    return found


def _converted_copies_of(gguf: Path) -> list[Path]:
    """specx's safetensors copies of this GGUF (named by its sha256), in any dtype."""
    from ..models.store import sha256_file

    return _converted(sha256_file(gguf)[:16]) if gguf.is_file() else []


def _tree_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _remove_tree(folder: Path) -> int:
    import shutil

    size = _tree_size(folder)
    shutil.rmtree(folder)
    return size


def _delete(entry, st: dict) -> int:
    """Through huggingface_hub's cache API: the revision goes unless another lock entry still uses it."""
    from ..models import lock

    if entry.ref is None:
        from ..state.paths import inside, model_cache

        path = inside(Path(st["path"]), model_cache() / "embedded")
        size = path.stat().st_size
        path.unlink()
        return size
    from huggingface_hub import scan_cache_dir

    others = [v for k, v in lock.read_all().items() if k != entry.key and v.get("commit") == st["commit"]]
    if others:   # another quant of the same commit: only drop this entry's files
        from ..models import hub

        for f in st["files"]:
            path = hub._cached(entry.ref.repo, f, st["commit"])
            if path is not None and all(f not in o.get("files", {}) for o in others):
                blob = path.resolve()
                if blob.is_relative_to(hub.cache_dir().resolve()):   # a link out of the cache: only the link goes
                    blob.unlink(missing_ok=True)
                path.unlink(missing_ok=True)
        return st["bytes"]
    strategy = scan_cache_dir().delete_revisions(st["commit"])
    strategy.execute()
    return strategy.expected_freed_size


@app.command(epilog="\b\nExamples:\n  specx verify qwen2.5-coder-7b\n  specx verify llama3:Q4_K_M\n\n" + EXIT_CODES)
def verify(name: NAME) -> None:
    """Re-hash a downloaded model's files against the sha256 the preset or the Hub stated."""
    from ..models import catalog, hub
    from ..errors import ModelFileError
    from ..models.store import _hash

    entry = catalog.lookup(name)
    st = catalog.state(entry)
    if not st["pulled"]:
        raise ModelUnavailable(f"{entry.label} is not downloaded", f"run `specx pull {name}`")
    bad, checked = [], 0
    for f, meta in st["files"].items():
        path = hub._cached(entry.ref.repo, f, st["commit"]) if entry.ref else Path(st["path"])
        if path is None or not path.exists():
            bad.append(f"{f} (missing)")
        elif meta.get("sha256"):
            checked += 1
            if _hash(path) != meta["sha256"]:
                bad.append(f"{f} (sha256 differs)")
    if bad:
        raise ModelFileError(f"{entry.label}: {', '.join(bad)}", f"run `specx rm {name} --yes` and `specx pull {name}`")
    output.note(f"{entry.label}: {checked} files match their sha256"
                + (f", {len(st['files']) - checked} small files have none to check" if len(st["files"]) > checked else ""))
