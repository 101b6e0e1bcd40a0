"""Models from the Hugging Face Hub, through huggingface_hub only: refs, file choice, download, checks.

huggingface_hub honours HF_HOME / HF_HUB_CACHE, HF_HUB_OFFLINE, HF_ENDPOINT and HF_TOKEN itself; specx
never reads, prints or stores the token (it only asks whether one is set, to word an error).
Downloads land in huggingface_hub's cache: a file is written to a private `blobs/….incomplete` file
(a dropped connection is resumed with a Range request; an interrupted pull deletes it) and linked into
`snapshots/<commit>/` only when complete, so nothing half-written is ever where the loader looks. What a pull got (commit, files, sizes, sha256) goes to the lock file.
"""
from __future__ import annotations

import contextlib
import errno
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from . import lock, store
from ..errors import InsufficientResources, ModelFileError, ModelUnavailable

TOKENIZER_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt", "added_tokens.json",
                   "chat_template.jinja", "chat_template.json")
REF = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+?)(?::(?P<quant>[\w.-]+))?(?:@(?P<rev>[\w./-]+))?$")
SPLIT = re.compile(r"-\d{5}-of-\d{5}\.gguf$")


class HubUnreachable(ModelUnavailable):
    """No connection to the Hub (a preset's mirror may still serve the weights)."""


@dataclass(frozen=True)
class HubRef:
    repo: str
    quant: str = ""
    revision: str = ""

    def __str__(self) -> str:
        return self.repo + (f":{self.quant}" if self.quant else "") + (f"@{self.revision}" if self.revision else "")


def parse_ref(text: str) -> HubRef | None:
    """`org/repo[:quant][@revision]` -> HubRef, or None when the text is not of that form."""
    if text.startswith((".", "/", "~")) or text.count("/") < 1:
        return None
    m = REF.match(text)
    if not m or m["repo"].count("/") != 1:
        return None
    return HubRef(m["repo"], m["quant"] or "", m["rev"] or "")


def endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def shown_endpoint() -> str:
    """The endpoint as messages show it: without the user:password@ that HF_ENDPOINT may carry."""
    from ..errors import redact

    return redact(endpoint())


def offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def token_found() -> bool:
    """Whether huggingface_hub has a token (HF_TOKEN or a login) — never its value."""
    from huggingface_hub import get_token

    return get_token() is not None


def cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _http_client_module():
    """The HTTP client huggingface_hub uses: `httpx2` from huggingface_hub 2.x, `httpx` in 1.x (both allowed by
    pyproject.toml; the network errors to catch are that client's)."""
    try:
        import httpx2 as http
    except ImportError:
        import httpx as http
    return http


@contextlib.contextmanager
def errors(ref: HubRef, name: str):
    """huggingface_hub's and the network's exceptions -> specx errors with a next step."""
    from huggingface_hub import errors as hf

    http = _http_client_module()

    pull = f"run `specx pull {name}` while online"
    try:
        yield
    except hf.GatedRepoError:
        found = "a token was found but it has no access yet" if token_found() else "no token was found"
        raise ModelUnavailable(f"{ref.repo} is gated: accept its terms at {shown_endpoint()}/{ref.repo}",
                               f"then set HF_TOKEN (or run `hf auth login`); {found}") from None
    except hf.RevisionNotFoundError:
        raise ModelUnavailable(f"revision {ref.revision!r} not found in {ref.repo}",
                               f"see {shown_endpoint()}/{ref.repo}/commits/main for valid revisions") from None
    except hf.RepositoryNotFoundError:
        found = "a token was found" if token_found() else "no token was found"
        raise ModelUnavailable(f"{ref.repo} was not found on the Hub (or it is private)",
                               f"check the name (org/name); for a private repo set HF_TOKEN ({found})") from None
    except hf.RemoteEntryNotFoundError as e:
        raise ModelUnavailable(f"a file of {ref.repo} is missing on the Hub: {_first_line(e)}",
                               "the repository changed since this preset was written: pin a revision") from None
    except (hf.OfflineModeIsEnabled, hf.LocalEntryNotFoundError):
        raise ModelUnavailable(f"{name} is not downloaded and the Hub is off (HF_HUB_OFFLINE)", pull) from None
    except (http.ConnectError, http.TimeoutException, http.RemoteProtocolError, http.ReadError) as e:
        raise HubUnreachable(f"cannot reach the Hub at {shown_endpoint()}: {type(e).__name__}",
                             f"check your connection (or HF_ENDPOINT), then {pull.split(' while')[0]}; "
                             "nothing half-written was kept") from None
    except hf.HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else "?"
        raise ModelUnavailable(f"the Hub answered {status} for {ref.repo}", "try again later") from None
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise InsufficientResources(f"the disk filled up downloading {ref.repo}",
                                        "free some disk or set HF_HOME to a bigger one; the next pull resumes") from None
        if "Consistency check failed" in str(e):
            raise ModelFileError(f"a download of {ref.repo} came back short ({_first_line(e)})",
                                 f"run `specx pull {name}` again") from None
        raise


def _first_line(e: BaseException) -> str:
    from ..errors import redact

    return redact(next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__))


@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int
    sha256: str       # the Hub's LFS sha256 (or a preset's), "" for small git files


def remote_files(ref: HubRef, name: str):
    """(commit, gated, files) of the repo at the requested revision: one model-info call."""
    from huggingface_hub import HfApi

    with errors(ref, name):
        info = HfApi(endpoint=endpoint()).model_info(ref.repo, revision=ref.revision or None, files_metadata=True)
    files = [RemoteFile(s.rfilename, s.size or 0, s.lfs.sha256 if s.lfs else "") for s in info.siblings or []]
    return info.sha, info.gated, files


def choose(ref: HubRef, files: list[RemoteFile]) -> tuple[str, list[RemoteFile]]:
    """The files a run needs: ("gguf", [one file]) or ("hf", config + tokenizer + safetensors)."""
    ggufs = [f for f in files if f.name.endswith(".gguf")]
    if ref.quant:
        pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(ref.quant)}(?![A-Za-z0-9_])", re.I)
        hits = [f for f in ggufs if f.name == ref.quant or pattern.search(Path(f.name).name)]
        if not hits:
            raise ModelUnavailable(f"{ref.repo} has no GGUF file for {ref.quant!r}", _gguf_hint(ref, ggufs))
        if any(SPLIT.search(f.name) for f in hits):
            raise ModelUnavailable(f"{ref.repo}:{ref.quant} is split into parts, which transformers cannot load",
                                   "pick a smaller quant that fits in one file")
        if len(hits) > 1:
            raise ModelUnavailable(f"{ref.quant!r} matches {len(hits)} files in {ref.repo}",
                                   "give the whole file name: " + ", ".join(f.name for f in hits[:4]))
        return "gguf", hits
    weights = [f for f in files if f.name.endswith(".safetensors") and "/" not in f.name]
    if any(not f.name.startswith("consolidated") for f in weights):   # Mistral's extra single-file copy
        weights = [f for f in weights if not f.name.startswith("consolidated")]
    if not weights:
        if ggufs:
            raise ModelUnavailable(f"{ref.repo} holds GGUF files only", _gguf_hint(ref, ggufs))
        raise ModelUnavailable(f"{ref.repo} has no .safetensors weights",
                               "specx loads safetensors or GGUF only (no pickled .bin files)")
    wanted = set(TOKENIZER_FILES) | {"model.safetensors.index.json"}
    return "hf", [f for f in files if f.name in wanted] + weights


def _gguf_hint(ref: HubRef, ggufs: list[RemoteFile]) -> str:
    if not ggufs:
        return f"{ref.repo} has no GGUF files: drop the `:{ref.quant}`"
    return f"pick one with {ref.repo}:QUANT, e.g. " + ", ".join(Path(f.name).stem for f in ggufs[:4])


def _cached(repo: str, filename: str, revision: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    path = try_to_load_from_cache(repo, filename, revision=revision)
    return Path(path) if isinstance(path, str) else None


def check_disk(need: int, folder: Path) -> None:
    """Refuse before downloading when the files cannot fit (with 1% + 50 MB to spare)."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if need * 1.01 + 50e6 > free:
        raise InsufficientResources(f"the download needs {need / 1e9:.2f} GB but {folder} has {free / 1e9:.2f} GB free",
                                    "free some disk, or set HF_HOME to a folder on a bigger disk")


def pull(ref: HubRef, name: str, sha256: Mapping[str, str] | None = None, bars=None) -> Path:
    """Download what a run needs (resuming partial files), check sizes and sha256, record the lock entry."""
    from huggingface_hub import hf_hub_download

    from ..progress import Bars

    commit, gated, files = remote_files(ref, name)
    kind, needed = choose(ref, files)
    expected = {f.name: (sha256 or {}).get(f.name) or f.sha256 for f in needed}
    missing = [f for f in needed if _cached(ref.repo, f.name, commit) is None]
    check_disk(sum(f.size for f in missing), cache_dir())
    needed.sort(key=lambda f: (f.name != "config.json", f.size))   # config first: refuse remote code early
    with contextlib.ExitStack() as stack:
        bars = bars or stack.enter_context(Bars())
        for f in needed:
            with errors(ref, name):
                path = Path(hf_hub_download(ref.repo, f.name, revision=commit, endpoint=endpoint(),
                                            tqdm_class=bars.tqdm_class(f.name)))
            if f.name == "config.json":
                _refuse_remote_code(path, ref)
    paths = {f.name: _cached(ref.repo, f.name, commit) for f in needed}
    for f in needed:
        verify_file(ref, paths[f.name], f.name, expected[f.name], name)
    main = paths[needed[0].name] if kind == "gguf" else paths["config.json"].parent
    lock.record(str(ref), {"repo": ref.repo, "quant": ref.quant, "revision": ref.revision or "main",
                           "commit": commit, "kind": kind, "gated": gated, "params": store.count_params(main, kind),
                           "files": {f.name: {"size": f.size, "sha256": expected[f.name] or ""} for f in needed}})
    return main


def fetch_small(ref: HubRef, name: str, commit: str, files: list[RemoteFile]) -> Path:
    """Download a few small files of one commit (config, tokenizer); returns the snapshot folder."""
    from huggingface_hub import hf_hub_download

    from ..progress import Bars

    folder = None
    with Bars() as bars:
        for f in sorted(files, key=lambda f: f.name != "config.json"):
            with errors(ref, name):
                path = Path(hf_hub_download(ref.repo, f.name, revision=commit, endpoint=endpoint(),
                                            tqdm_class=bars.tqdm_class(f"{ref.repo}/{f.name}")))
            if f.name == "config.json":
                _refuse_remote_code(path, ref)
            folder = path.parent
    if folder is None:
        raise ModelUnavailable(f"{ref.repo} has no config or tokenizer files", "pick another model")
    return folder


def _refuse_remote_code(config_path: Path, ref: HubRef) -> None:
    import json

    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(config, dict) and "auto_map" in config:
        raise ModelUnavailable(f"{ref.repo} needs custom code from its repository to run",
                               "specx never runs remote code; pick a model that transformers supports natively")


def verify_file(ref: HubRef, path: Path | None, filename: str, sha: str, name: str) -> None:
    """Hash a downloaded file against the known sha256; a mismatch removes it (blob and link)."""
    from .store import sha256_file

    if path is None or not path.exists():
        raise ModelFileError(f"{filename} of {ref.repo} is missing after the download", f"run `specx pull {name}` again")
    if not sha:
        return
    actual = sha256_file(path)
    if actual != sha:
        blob = path.resolve()
        path.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        raise ModelFileError(f"{filename} of {ref.repo} has sha256 {actual[:16]}…, expected {sha[:16]}…; "
                             "the file was deleted",
                             f"run `specx pull {name}` again; if it repeats, the source changed: check {shown_endpoint()}/{ref.repo}")


def cached(ref: HubRef) -> Path | None:
    """The local copy a past pull recorded (no network), or None when any file is missing."""
    entry = lock.get(str(ref))
    if not entry:
        return None
    paths = [_cached(ref.repo, name, entry["commit"]) for name in entry.get("files", {})]
    if not paths or any(p is None or not p.exists() for p in paths):
        return None
    if entry.get("kind") == "gguf":
        return paths[0]
    return next(p for p in paths if p.name == "config.json").parent


def ensure(ref: HubRef, name: str, sha256: Mapping[str, str] | None = None) -> Path:
    """The local copy, downloading it first when needed (not when HF_HUB_OFFLINE is set)."""
    path = cached(ref)
    if path is not None:
        return path
    if offline():
        raise ModelUnavailable(f"{name} is not downloaded and the Hub is off (HF_HUB_OFFLINE is set)",
                               f"run `specx pull {name}` while online")
    return pull(ref, name, sha256)
