"""`specx pull | list | show | rm | verify`: the model cache, through huggingface_hub's cache API."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from ..errors import ModelUnavailable
from . import EXIT_CODES, app, output


def complete_names(incomplete: str) -> list[str]:
    """Preset names for shell completion (TOML only: no torch, no network)."""
    from .. import presets

    try:
        names = presets.all_presets()
    except Exception:  # noqa: BLE001  (a broken user preset must not break completion)
        return []
    return sorted(n for n in names if n.startswith(incomplete))


NAME = Annotated[str, typer.Argument(help="A preset name (NAME[:QUANT]), a preset file, or a Hub repo "
                                          "org/name[:quant][@revision].", autocompletion=complete_names)]
JSON = Annotated[bool, typer.Option("--json", help="JSON on stdout.")]


def emit(text: str) -> None:
    """stdout carries the command's data; a reader that went away (`| head`) ends it quietly (141)."""
    try:
        output.write_stdout(text)
    except output.OutputError as e:
        output.silence_stdout()
        if e.errno == 32:
            raise typer.Exit(141) from None
        raise


def _gb(n: int | None) -> str:
    return output.human_bytes(n) if n else "-"


@app.command(epilog="\b\nExamples:\n  specx pull qwen2.5-coder-1.5b\n  specx pull bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"
                    "\n\n" + EXIT_CODES)
def pull(name: NAME,
         no_drafter: Annotated[bool, typer.Option("--no-drafter", help="Only the target, not its default drafter.")] = False,
         json_out: JSON = False) -> None:
    """Download a model (and its preset's default drafter) into the Hugging Face cache."""
    from ..errors import Interrupted
    from ..memory.variant import entry_for

    entry = entry_for(name, output.note)
    try:
        pulled = [_pull_one(entry)]
        drafter = next((d for d in entry.preset.drafters if d != "ngram"), None) if entry.preset else None
        if drafter and not no_drafter:
            output.note(f"drafter: pulling {drafter}, the first drafter candidate of {entry.preset.name}")
            pulled.append(_pull_one(entry_for(drafter, output.note)))
    except KeyboardInterrupt:
        raise Interrupted("download interrupted", f"nothing half-written was kept; run `specx pull {name}` again") from None
    if json_out:
        emit(json.dumps(pulled) + "\n")


def _pull_one(entry) -> dict:
    """Pull one entry (Hub or mirror) and return its state."""
    from ..models import catalog, hub
    from ..models.preset_source import from_mirror

    if entry.ref is None:
        from_mirror(entry.preset, entry.preset.mirrors[0])
    else:
        if hub.offline():
            if catalog.is_local(entry):
                output.note(f"{entry.label}: already downloaded (HF_HUB_OFFLINE is set, so not checked for updates)")
                return {"name": entry.label, **catalog.state(entry)}
            raise ModelUnavailable(f"cannot pull {entry.label}: HF_HUB_OFFLINE is set",
                                       "unset HF_HUB_OFFLINE and run the pull again")
        hub.pull(entry.ref, entry.label, entry.sha256)
    st = catalog.state(entry)
    commit = f"commit {st['commit'][:12]}, " if st.get("commit") else ""
    output.note(f"pulled {entry.label}: {commit}{len(st['files'])} files, {_gb(st['bytes'])}")
    return {"name": entry.label, **st}


@app.command(name="list", epilog="\b\nExamples:\n  specx list\n  specx list --json | jq -r '.[].name'\n\n" + EXIT_CODES)
def list_models(json_out: JSON = False) -> None:
    """Presets and downloaded models, with size on disk and whether they are complete."""
    from .. import presets
    from ..models import catalog

    rows, covered = [], set()
    for name, preset in sorted(presets.all_presets().items()):
        entry = catalog.lookup(name)
        st = catalog.state(entry)
        covered.add(entry.key)
        rows.append({"name": name, "kind": "preset", "source": str(entry.ref or preset.mirrors[0].wheel),
                     "drafters": list(preset.drafters), **_status(st)})
    rows += _other_cached(covered)
    if json_out:
        emit(json.dumps(rows) + "\n")
        return
    width = max(len(r["name"]) for r in rows if r["kind"] != "converted")
    emit(f"{'NAME':<{width}}  {'STATUS':<8}  {'ON DISK':>9}  SOURCE\n")
    for r in rows:
        emit(f"{r['name']:<{width}}  {r['status']:<8}  {_gb(r['bytes']):>9}  {r['source']}\n")


def _status(st: dict) -> dict:
    status = "complete" if st["complete"] else "partial" if st["pulled"] else "-"
    return {"status": status, "complete": st["complete"], "bytes": st["bytes"], "commit": st.get("commit")}


def _other_cached(covered: set[str]) -> list[dict]:
    """Pulls that are not presets (Hub refs, other quants), and specx's own converted copies."""
    from ..models import catalog, lock
    from ..state.paths import model_cache

    rows = []
    for key in sorted(set(lock.read_all()) - covered):
        entry = catalog.lookup(key)
        rows.append({"name": key, "kind": "hub", "source": key, "drafters": [], **_status(catalog.state(entry))})
    rows += _hf_cache_rows({r["source"].split(":")[0].split("@")[0] for r in rows} | {k.split(":")[0].split("@")[0] for k in covered})
    for folder in sorted((model_cache() / "converted").glob("[0-9a-f]*")):
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        complete = (folder / "specx-complete.json").is_file()
        rows.append({"name": f"converted/{folder.name[:16]}", "kind": "converted", "source": str(folder),
                     "drafters": [], "status": "complete" if complete else "partial", "complete": complete,
                     "bytes": size, "commit": None})
    return rows


def _hf_cache_rows(known: set[str]) -> list[dict]:
    """Models in the Hugging Face cache that no preset or pull of specx accounts for (e.g. `hf download`)."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        info = scan_cache_dir()
    except (CacheNotFound, OSError):
        return []
    return [{"name": r.repo_id, "kind": "hf-cache", "source": str(r.repo_path), "drafters": [],
             "status": "cached", "complete": None, "bytes": r.size_on_disk, "commit": None}
            for r in sorted(info.repos, key=lambda r: r.repo_id) if r.repo_type == "model" and r.repo_id not in known]


@app.command(epilog="\b\nExamples:\n  specx show llama3\n  specx show qwen2.5-coder-7b --json\n\n" + EXIT_CODES)
def show(name: NAME, json_out: JSON = False) -> None:
    """Where a model comes from, its files and sizes, drafter candidates and licence."""
    from ..models import catalog

    entry = catalog.lookup(name)
    info = describe(entry, catalog.state(entry))
    if json_out:
        emit(json.dumps(info) + "\n")
        return
    for key, value in info.items():
        if isinstance(value, dict):
            emit(f"{key}:\n" + "".join(f"  {k}  {v}\n" for k, v in value.items()))
        elif isinstance(value, list):
            emit(f"{key}: {', '.join(map(str, value)) or '-'}\n")
        elif value not in (None, ""):
            emit(f"{key}: {value}\n")


UNKNOWN = "unknown until pulled"


def describe(entry, st: dict) -> dict:
    """What `show` prints: sourced facts from the preset, resolved facts from the lock file."""
    p = entry.preset
    files = {f: f"{_gb(v.get('size'))}" + (f"  sha256 {v['sha256'][:16]}…" if v.get("sha256") else "")
             for f, v in st.get("files", {}).items()}
    sourced = p and p.gated is not None and entry.ref and entry.ref.repo == p.target.repo
    gated = p.gated if sourced else st.get("gated", UNKNOWN) if st["pulled"] else UNKNOWN
    info = {"name": entry.label, "description": p.description if p else "",
            "repo": entry.ref.repo if entry.ref else f"(mirror) {p.mirrors[0].wheel}",
            "revision": (entry.ref.revision or "main (resolved at pull time)") if entry.ref else "",
            "commit": st.get("commit") or (UNKNOWN if entry.ref else ""),
            "status": "complete" if st["complete"] else "partial" if st["pulled"] else "not downloaded",
            "path": st.get("path") or "", "size on disk": _gb(st["bytes"]) if st["pulled"] else UNKNOWN,
            "files": files or UNKNOWN, "params": (p.target.params if p and p.target.params else st.get("params"))
            or UNKNOWN, "license": (p.license if p else "") or UNKNOWN, "gated": gated,
            "drafters": list(p.drafters) if p else ["ngram"], "default k": p.k if p else 4}
    if p:
        if p.quants:
            info["quants"] = {q: f"{v.repo} {v.file}" for q, v in p.quants.items()}
        if p.sampling.temperature or p.sampling.top_p or p.sampling.top_k:
            s = p.sampling
            info["recommended sampling"] = f"--temperature {s.temperature} --top-p {s.top_p} --top-k {s.top_k}"
        info["notes"], info["source"] = p.notes, p.target.source or p.source
    return info


from . import rm_cmd as _rm_cmd  # noqa: E402,F401  (rm, verify)
