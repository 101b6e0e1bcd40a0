"""The tokenizer a GGUF file describes, built the way transformers builds it, cached by content.

`AutoTokenizer.from_pretrained(folder, gguf_file=name)` spends most of its time reading the file
with gguf.GGUFReader for a config it only needs the model type of, and then reads the vocabulary
again. Here the metadata comes from the GGUFFile already open; the pieces are transformers' own:
its key mapping, `convert_gguf_tokenizer` for the backend, the class AutoTokenizer picks. Tests
hold the result equal to AutoTokenizer's on every fixture model.

The cache holds the converted backend (KEY.json, a tokenizer.json), under a key made of the metadata
that defines it (tokenizer.*, general.architecture and general.name, as the file stores them) and the
transformers and tokenizers versions, and beside it the class and arguments it was constructed with
(KEY.args.json, a function of the same key). A fresh and a cached load then construct the class the
same way, from that file; a cached load needs neither the vocabulary decoded nor transformers' GGUF
key mapping and class lookup imported. (save_pretrained's folder is not what is reloaded: for a class
with its own __init__, from_pretrained rebuilds the backend from vocabulary and merges, which is not
the GGUF path.)"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import tempfile
from pathlib import Path

from ..errors import DAMAGED_GGUF, ModelFileError, ModelUnavailable

from .gguf_file import GGUFFile
from .gguf_strings import Strings

_FORMAT = "specx-gguf-tokenizer-1"  # bump when what is cached, or how the key is made, changes
_ARGS_FORMAT = "specx-gguf-tokenizer-args-1"  # bump when what the .args.json beside an entry holds changes
_DEFINING = ("general.architecture", "general.name")  # besides tokenizer.*: the model type's inputs
# architectures whose transformers model type is another name (transformers' load_gguf_checkpoint)
_MODEL_TYPES = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss", "gpt_oss": "gpt_oss",
                "minimax-m2": "minimax_m2", "gemma3": "gemma3_text", "gemma4": "gemma4_text"}


def load_tokenizer(gguf: GGUFFile):
    """The transformers tokenizer of a GGUF file (equal to AutoTokenizer's with gguf_file=...)."""
    # what transformers' from_pretrained passes besides (its vocabulary checks read name_or_path's folder)
    passed = {"name_or_path": str(gguf.path.parent), "is_local": True, "local_files_only": False,
              "added_tokens_decoder": {}}
    try:
        cached = _cache_file(gguf)
        tokenizer = _from_cache(gguf, cached, passed)
    except Exception as e:
        raise _unavailable(gguf, e) from e
    if tokenizer is not None:
        return tokenizer
    tokenizer_dict, init = tokenizer_inputs(gguf)
    try:
        cls = tokenizer_class(gguf)
        construct = lambda file: cls(tokenizer_file=file, **passed, **init)  # noqa: E731
        tokenizer = _from_backend(cached, construct)
        if tokenizer is None:
            tokenizer = _build(gguf, tokenizer_dict, cached, construct)
        _write_args(cached, cls, init, gguf)
        return tokenizer
    except Exception as e:  # transformers' ValueError, tokenizers' bare Exception (a merge of no token)
        raise _unavailable(gguf, e) from e


def _from_cache(gguf: GGUFFile, cached: Path, passed: dict):
    """The tokenizer from a complete cache entry (backend, class and arguments), or None: no vocabulary
    decoded, none of transformers' GGUF conversion imported."""
    known = _read_args(cached)
    if known is None:
        return None
    cls, init = known
    try:
        return (cls or tokenizer_class(gguf))(tokenizer_file=str(cached), **passed, **init)
    except Exception:  # an unreadable cache entry (a cut write, a foreign file) is rebuilt
        _forget(cached)
        return None


def _from_backend(cached: Path, construct):
    """The tokenizer from a cached backend whose arguments were not recorded (an earlier specx's), or None."""
    if not cached.is_file():
        return None
    try:
        return construct(str(cached))
    except Exception:
        cached.unlink(missing_ok=True)
        return None


def _unavailable(gguf: GGUFFile, e: Exception) -> ModelUnavailable:
    return ModelUnavailable(f"cannot build the tokenizer of {gguf.path.name}: {e}",
                            hint="transformers cannot read this file's vocabulary: try another GGUF of the "
                                 "model, or its Hugging Face folder")


def tokenizer_inputs(gguf: GGUFFile) -> tuple[dict, dict]:
    """(tokenizer_dict, tokenizer_config) as transformers' get_gguf_tokenizer makes them."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import _SPECIAL_TOKENS, GGUF_TOKENIZER_MAPPING

    meta = gguf.meta
    grouped = {group: {name: _plain(meta[f"tokenizer.{key}"]) for key, name in renames.items()
                       if f"tokenizer.{key}" in meta}
               for group, renames in GGUF_TOKENIZER_MAPPING.items()}
    tokenizer, config = grouped["tokenizer"], grouped["tokenizer_config"]
    tokens = tokenizer.get("tokens")
    if not isinstance(tokens, list) or not tokens or not isinstance(tokens[0], str):
        raise ModelFileError(f"{gguf.path.name} holds no vocabulary (tokenizer.ggml.tokens)", hint=DAMAGED_GGUF)
    if tokenizer.get("tokenizer_type") == "llama":
        config.setdefault("add_bos_token", True)   # llama.cpp adds BOS to a sentencepiece vocabulary
    elif tokenizer.get("tokenizer_type") == "gemma4":
        config["add_bos_token"] = False            # its chat template writes <bos> itself
    for name, key in _SPECIAL_TOKENS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        if token_id is not None and not (isinstance(token_id, int) and 0 <= token_id < len(tokens)):
            raise ModelFileError(f"{gguf.path.name}: tokenizer.ggml.{key} {token_id!r} is not a token of its "
                                 f"{len(tokens)}", hint=DAMAGED_GGUF)
        config[name] = tokens[token_id] if token_id is not None else None
    return tokenizer, config


def same_vocabulary(a: GGUFFile, b: GGUFFile) -> bool:
    """Whether two files' tokenizers encode and decode alike, known without building either: every tokenizer.*
    value but the chat templates the same bytes, and the same model type (the cache key's inputs but the chat
    template, which renders prompts and tokenizes nothing, and general.name and the architecture, which only
    pick the class, a function of the model type). A drafter of the target's family has the target's
    vocabulary so."""
    def keys(g: GGUFFile) -> list[str]:
        return sorted(k for k in g.meta if k.startswith("tokenizer.") and not k.startswith("tokenizer.chat_template"))

    if keys(a) != keys(b):
        return False
    return all(a.raw_meta(k) == b.raw_meta(k) for k in keys(a)) and _model_type(a) == _model_type(b)


def tokenizer_class(gguf: GGUFFile):
    """The class AutoTokenizer picks for this file: its model type's, else TokenizersBackend."""
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES, tokenizer_class_from_name
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    name = TOKENIZER_MAPPING_NAMES.get(_model_type(gguf))
    cls = tokenizer_class_from_name(name) if name else None
    # Mistral's own backend only for files in Mistral's format (tekken.json), which a GGUF is not
    return TokenizersBackend if cls is None or cls.__name__ == "MistralCommonBackend" else cls


def _model_type(gguf: GGUFFile) -> str:
    """The transformers model type of the file's config, as transformers derives it."""
    from transformers.integrations.gguf import GGUF_CONFIG_ARCHS, get_gguf_config

    meta, arch = gguf.meta, gguf.meta.get("general.architecture", "")
    if arch in GGUF_CONFIG_ARCHS:  # transformers' newer config path, on its reader's view of the metadata
        view = {k: len(v) if isinstance(v, (list, Strings)) else _plain(v) for k, v in meta.items()}  # arrays: counts
        return get_gguf_config(view, tuple(gguf.tensors))["model_type"]
    if "llama" in arch and meta.get("general.name") == "mistral":  # transformers tests list membership
        return "mistral"
    return _MODEL_TYPES.get(arch, arch)


def _plain(value):
    """A metadata value as transformers' reader gives it (numeric arrays as lists)."""
    return value.tolist() if hasattr(value, "tolist") else value


def _cache_file(gguf: GGUFFile) -> Path:
    """Where this file's converted backend is cached."""
    import tokenizers
    import transformers

    from ..state.paths import model_cache

    digest = hashlib.sha256(f"{_FORMAT}\0{transformers.__version__}\0{tokenizers.__version__}".encode())
    for key in sorted(k for k in gguf.meta if k.startswith("tokenizer.") or k in _DEFINING):
        digest.update(key.encode() + b"\0" + gguf.raw_meta(key))
    return model_cache() / "tokenizers" / f"{digest.hexdigest()[:32]}.json"


def _args_file(cached: Path) -> Path:
    return cached.with_suffix(".args.json")


def _read_args(cached: Path) -> tuple[type | None, dict] | None:
    """The class (None: to be derived again) and arguments a cached backend was built with, or None when
    there is no such entry or it is unreadable."""
    try:
        if not cached.is_file():
            return None
        doc = json.loads(_args_file(cached).read_text(encoding="utf-8"))
        if doc.get("format") != _ARGS_FORMAT or not isinstance(doc.get("init"), dict):
            return None
        return _class_named(doc.get("class")), doc["init"]
    except Exception:  # a cut or foreign file: the entry is derived again and rewritten
        return None


def _write_args(cached: Path, cls: type, init: dict, gguf: GGUFFile) -> None:
    """Record what the cached backend is constructed with, when JSON holds it exactly. The class only where
    it follows from the key's metadata (general.architecture and .name), not from transformers' config
    functions, which read the whole header."""
    from transformers.integrations.gguf import GGUF_CONFIG_ARCHS

    arch = gguf.meta.get("general.architecture")
    name = None if arch in GGUF_CONFIG_ARCHS else f"{cls.__module__}:{cls.__qualname__}"
    try:
        text = json.dumps({"format": _ARGS_FORMAT, "class": name, "init": init})
        if json.loads(text)["init"] != init or not cached.is_file():
            return
        fd, tmp = tempfile.mkstemp(prefix=".tokenizer-", suffix=".tmp", dir=cached.parent)
    except (TypeError, ValueError, OSError):
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, _args_file(cached))  # atomic, as the backend's
    except OSError:
        pass  # unrecorded: the next load derives the class and arguments again
    finally:
        Path(tmp).unlink(missing_ok=True)


def _class_named(name) -> type | None:
    """A tokenizer class of transformers by "module:qualname" (None stays None); ValueError for anything else."""
    if name is None:
        return None
    from transformers.tokenization_utils_tokenizers import TokenizersBackend

    module, _, qualname = str(name).partition(":")
    if not module.startswith("transformers.") or not qualname.isidentifier():
        raise ValueError(f"not a transformers tokenizer class: {name!r}")
    cls = getattr(importlib.import_module(module), qualname)
    if not (isinstance(cls, type) and issubclass(cls, TokenizersBackend)):
        raise ValueError(f"not a transformers tokenizer class: {name!r}")
    return cls


def _forget(cached: Path) -> None:
    cached.unlink(missing_ok=True)
    _args_file(cached).unlink(missing_ok=True)


def _build(gguf: GGUFFile, tokenizer_dict: dict, cached: Path, construct):
    """Convert the vocabulary once, write the backend atomically to the cache, construct from it
    (from a temporary file when the cache cannot be written)."""
    from transformers.integrations.gguf import convert_gguf_tokenizer

    backend, _ = convert_gguf_tokenizer(gguf.meta.get("general.architecture", ""), tokenizer_dict)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tokenizer-", suffix=".tmp", dir=cached.parent)
    except OSError:
        cached = None
        fd, tmp = tempfile.mkstemp(prefix="specx-tokenizer-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(backend.to_str())
        if cached is None:
            return construct(tmp)
        os.replace(tmp, cached)  # atomic: a concurrent loader sees the whole file or none
        return construct(str(cached))
    finally:
        Path(tmp).unlink(missing_ok=True)
