"""The tokenizer a GGUF file describes, built the way transformers builds it, cached by content.

`AutoTokenizer.from_pretrained(folder, gguf_file=name)` spends most of its time reading the file
with gguf.GGUFReader for a config it only needs the model type of, and then reads the vocabulary
again. Here the metadata comes from the GGUFFile already open; the pieces are transformers' own:
its key mapping, `convert_gguf_tokenizer` for the backend, the class AutoTokenizer picks. Tests
hold the result equal to AutoTokenizer's on every fixture model.

The cache holds the converted backend only (tokenizer.json), under a key made of the metadata that
defines it (tokenizer.*, general.architecture and general.name, as the file stores them) and the
transformers and tokenizers versions; the class and its arguments come from the metadata each
time (microseconds). A fresh and a cached load then construct the class the same way, from that
file. (save_pretrained's folder is not what is reloaded: for a class with its own __init__,
from_pretrained rebuilds the backend from vocabulary and merges, which is not the GGUF path.)"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from ..errors import ModelFileError, ModelUnavailable

from .gguf_file import GGUFFile
from .gguf_strings import Strings

_DAMAGED = "the file is damaged or not a GGUF model: download it again"
_FORMAT = "specx-gguf-tokenizer-1"  # bump when what is cached, or how the key is made, changes
_DEFINING = ("general.architecture", "general.name")  # besides tokenizer.*: the model type's inputs
# architectures whose transformers model type is another name (transformers' load_gguf_checkpoint)
_MODEL_TYPES = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss", "gpt_oss": "gpt_oss",
                "minimax-m2": "minimax_m2", "gemma3": "gemma3_text", "gemma4": "gemma4_text"}


def load_tokenizer(gguf: GGUFFile):
    """The transformers tokenizer of a GGUF file (equal to AutoTokenizer's with gguf_file=...)."""
    tokenizer_dict, init = tokenizer_inputs(gguf)
    # what transformers' from_pretrained passes besides (its vocabulary checks read name_or_path's folder)
    kwargs = {"name_or_path": str(gguf.path.parent), "is_local": True, "local_files_only": False,
              "added_tokens_decoder": {}, **init}
    try:
        cls = tokenizer_class(gguf)
        cached = _cache_file(gguf)
        if cached.is_file():
            try:
                return cls(tokenizer_file=str(cached), **kwargs)
            except Exception:  # an unreadable cache entry (a cut write, a foreign file) is rebuilt
                cached.unlink(missing_ok=True)
        return _build(gguf, tokenizer_dict, cached, lambda file: cls(tokenizer_file=file, **kwargs))
    except Exception as e:  # transformers' ValueError, tokenizers' bare Exception (a merge of no token)
        raise ModelUnavailable(f"cannot build the tokenizer of {gguf.path.name}: {e}",
                               hint="transformers cannot read this file's vocabulary: try another GGUF of "
                                    "the model, or its Hugging Face folder") from e


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
        raise ModelFileError(f"{gguf.path.name} holds no vocabulary (tokenizer.ggml.tokens)", hint=_DAMAGED)
    if tokenizer.get("tokenizer_type") == "llama":
        config.setdefault("add_bos_token", True)   # llama.cpp adds BOS to a sentencepiece vocabulary
    elif tokenizer.get("tokenizer_type") == "gemma4":
        config["add_bos_token"] = False            # its chat template writes <bos> itself
    for name, key in _SPECIAL_TOKENS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        if token_id is not None and not (isinstance(token_id, int) and 0 <= token_id < len(tokens)):
            raise ModelFileError(f"{gguf.path.name}: tokenizer.ggml.{key} {token_id!r} is not a token of its "
                                 f"{len(tokens)}", hint=_DAMAGED)
        config[name] = tokens[token_id] if token_id is not None else None
    return tokenizer, config


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
