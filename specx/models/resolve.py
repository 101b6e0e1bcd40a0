"""Resolve a model reference (file, folder, preset) and load it, tokenizer first."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import presets
from ..errors import ModelFileError, ModelUnavailable, UsageError

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class Source:
    """A resolved model: a GGUF file or a Hugging Face folder, plus the preset it came from."""

    kind: str            # "gguf" | "hf"
    path: Path
    name: str
    preset: presets.Preset | None = None
    variant: str = ""    # which preset GGUF variant a run took and why (memory/variant.py), for the memory sentence


def resolve(ref: str, variant: str = "") -> Source:
    """An existing path wins, then a preset name (`NAME[:QUANT]`; a .toml path is a preset file),
    then a Hub repo `org/name[:quant][@revision]` (downloaded once, then used offline).
    `variant`: the preset's GGUF variant a run takes (memory/variant.py chooses it), over a `:QUANT` suffix."""
    preset, suffix = preset_of(ref)
    if preset is not None:
        return _from_preset(preset, variant or suffix)
    if variant:
        raise UsageError(f"--quant {variant} picks one of a preset's GGUF variants, and {ref} is not a preset",
                         "a GGUF file runs as it is (drop --quant); for a Hub repo write org/name:" + variant)
    path = Path(ref).expanduser()
    if path.exists():
        return _from_path(path)
    if ref.endswith((".gguf", ".toml")) or os.sep in ref and not _looks_like_repo(ref):
        raise ModelUnavailable(f"model file or folder not found: {ref}", "check the path")
    from . import hub

    return _hub_source(hub.ensure(hub.parse_ref(ref), ref), ref)


def preset_of(ref: str) -> tuple[presets.Preset | None, str]:
    """(the preset a reference names, its `:QUANT` suffix), or (None, "") for a path or a Hub repo; no network."""
    path = Path(ref).expanduser()
    if path.exists():
        _say_if_shadowing(ref, path)
        if presets.is_preset_file(path):
            return presets.parse(path.read_text(encoding="utf-8"), str(path)), ""
        return None, ""
    if ref.endswith((".gguf", ".toml")) or os.sep in ref and not _looks_like_repo(ref):
        return None, ""
    from . import hub

    if _looks_like_repo(ref.split("@")[0].split(":")[0]) and hub.parse_ref(ref) is not None:
        return None, ""
    name, _, quant = ref.partition(":")
    return presets.find(name), quant


_SAID: set[str] = set()


def _say_if_shadowing(ref: str, path: Path) -> None:
    """A bare name that is both a path here and a preset: the path wins (documented), and is said, once."""
    if ref in _SAID or ref != path.name or ref not in presets.all_presets():
        return
    _SAID.add(ref)
    from .store import _say

    _say(f"note: {ref} is the {'folder' if path.is_dir() else 'file'} ./{ref} in this directory, not the preset "
         f"{ref} (for the preset, write `{ref}:` or run from another directory)")


def _looks_like_repo(ref: str) -> bool:
    return ref.count("/") == 1 and not ref.startswith((".", "/", "~"))


def _from_path(path: Path) -> Source:
    if path.is_dir():
        if (path / "config.json").is_file():
            return Source("hf", path, path.name)
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return Source("gguf", ggufs[0], ggufs[0].stem)
        raise ModelUnavailable(f"{path} holds no config.json and no single .gguf file",
                               "point at a GGUF file or a Hugging Face model folder")
    if path.stat().st_size == 0:
        raise ModelFileError(f"model file {path} is empty")
    with open(path, "rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise ModelFileError(f"{path} is not a GGUF file (wrong magic bytes)",
                                 "give a .gguf file or a Hugging Face model folder")
    return Source("gguf", path, path.stem)


def _from_preset(preset: presets.Preset, quant: str = "") -> Source:
    from .preset_source import from_preset

    return from_preset(preset, quant)


def _hub_source(path: Path, name: str, preset: presets.Preset | None = None) -> Source:
    return Source("gguf" if path.suffix == ".gguf" else "hf", path, name, preset)


DTYPES = ("float32", "bfloat16", "float16")


def dtype_name(name: str) -> str:
    """'auto' means float32 on CPU for now."""
    if name == "auto":
        return "float32"
    if name not in DTYPES:
        raise UsageError(f"unknown dtype {name}", "use auto, float32, bfloat16 or float16")
    return name


def torch_dtype(name: str):
    import torch

    return getattr(torch, dtype_name(name))


def _check_hf_folder(path: Path) -> None:
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ModelFileError(f"cannot read {path / 'config.json'}: {e}") from None
    if "auto_map" in config:
        raise ModelUnavailable(f"{path.name} needs custom code from its repository to run",
                               "specx never runs remote code; pick a model that transformers supports natively")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if config.get("model_type") not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ModelUnavailable(f"{path.name}: unsupported architecture {config.get('model_type')!r}",
                               "specx runs the causal language models that transformers implements natively")
    if not any(path.glob("*.safetensors")):
        raise ModelUnavailable(f"{path} has no .safetensors weights",
                               "specx loads safetensors or GGUF only (no pickled .bin files)")


def model_dir(source: Source, dtype: str) -> Path:
    """The folder transformers loads from: the HF folder, or a converted copy of the GGUF."""
    if source.kind == "hf":
        _check_hf_folder(source.path)
        return source.path
    from .store import check_gguf, converted_copy

    check_gguf(source.path)
    return converted_copy(source.path, dtype_name(dtype))


def load_tokenizer(source: Source):
    """The tokenizer alone (no weights): from the folder, or from the GGUF's metadata (decoder/tokenizer.py)."""
    from transformers import AutoTokenizer

    from ..progress import library_calls

    try:
        if source.kind == "hf":
            _check_hf_folder(source.path)
            with library_calls():
                return AutoTokenizer.from_pretrained(source.path, trust_remote_code=False)
        from ..decoder.gguf_file import open_gguf
        from ..decoder.tokenizer import load_tokenizer as gguf_tokenizer

        gguf = open_gguf(source.path)   # checked as it is read; the tokenizer is cached by content
        try:
            return gguf_tokenizer(gguf)
        finally:
            gguf.close()
    except (ValueError, OSError, KeyError) as e:
        raise ModelUnavailable(f"cannot load the tokenizer of {source.name}: {e}") from None


def same_tokenizer(target: Source, drafter: Source) -> bool:
    """Whether two resolved models are GGUF files of one vocabulary (decoder/tokenizer.py's same_vocabulary): then
    a drafter check would pass, neither tokenizer needs building to know it, and the drafter is loaded with the
    target's tokenizer (load_lm's `tokenizer`)."""
    if target.kind != "gguf" or drafter.kind != "gguf":
        return False
    from ..decoder.gguf_file import open_gguf
    from ..decoder.tokenizer import same_vocabulary

    with open_gguf(target.path) as a, open_gguf(drafter.path) as b:
        return same_vocabulary(a, b)


def eos_ids(source: Source, tokenizer) -> frozenset[int]:
    """End-of-sequence ids known without weights: the tokenizer's, plus generation_config.json's."""
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    config = source.path / "generation_config.json" if source.kind == "hf" else None
    if config and config.is_file():
        value = json.loads(config.read_text(encoding="utf-8")).get("eos_token_id")
        ids.update([value] if isinstance(value, int) else value or [])
    return frozenset(int(i) for i in ids)


_LOADED: dict[tuple, object] = {}


def load_lm(source: Source, dtype: str = "auto", weights: str = "none", draft_vocab: int = 0, placement=None,
            tokenizer=None):
    """Load model + tokenizer (memoised per process) as an LM with its own cache.

    `weights` is a resolved CPU weight precision (fastpath.choose): none, fp16, int8 or int4.
    `draft_vocab` > 0 keeps only that many output rows (VocabTrim; for drafters only).
    `placement` (placement.Load with from_pretrained arguments): a device map, disk offload or a
    bitsandbytes quantization from the memory plan; such a model keeps transformers' own layers.
    `tokenizer`: its target's, for a drafter of the target's vocabulary (same_tokenizer), which then builds no
    second one (memoised apart from the same model with its own: chat templates may differ)."""
    from ..cpu import fastpath
    from ..decoder import vocabtrim
    from ..progress import library_calls
    from .lm import LM

    if weights.startswith("native"):   # the lean decoder, on the file's own weights (memory/placement.py)
        return _load_lean(source, weights.split()[-1], draft_vocab, tokenizer)
    if weights.startswith("dense"):    # the CUDA decoder: "dense DEVICE DTYPE CONTEXT [blocks]" (memory/placement.py)
        _, device, dense_dtype, context, *blocks = weights.split()
        return _load_dense(source, device, dense_dtype, int(context), draft_vocab, blocks == ["blocks"], tokenizer)
    dispatched = placement is not None and placement.dispatched
    key = (str(source.path), dtype_name(dtype), weights, draft_vocab,   # "auto" and "float32" are one model
           placement.kwargs if dispatched else (), _given(tokenizer))
    if key not in _LOADED:
        folder = model_dir(source, dtype)   # a GGUF is converted once first (store.converted_copy)
        with library_calls():
            model, own = _from_pretrained(source, folder, dtype,
                                          placement.from_pretrained_kwargs() if dispatched else {}, tokenizer is None)
        tokenizer = own if tokenizer is None else tokenizer
        n_params = sum(p.numel() for p in model.parameters())
        vocab = int(model.get_output_embeddings().weight.size(0))
        keep = None
        if draft_vocab:
            keep = vocabtrim.keep_ids(tokenizer, min(len(tokenizer), vocab), draft_vocab)
            vocabtrim.trim_output_layer(model, keep)
        with library_calls():   # packing the weights for specx's kernels calls torch's quantizers
            fast = "kernels: transformers' own (placed by the memory plan)" if dispatched else fastpath.apply(model, weights)
        kernels = ", ".join(filter(None, [fast, vocabtrim.describe(keep, vocab)]))
        _LOADED[key] = LM(model, tokenizer, source.name, n_params=n_params, kernels=kernels, vocab=vocab,
                          keep_ids=keep, weights=weights)
    return _LOADED[key].fresh()


def _given(tokenizer) -> int | None:
    """A memo key's part for a model loaded with another model's tokenizer (that object: the memoised model keeps
    it alive, so its id is not reused), None for one loading its own."""
    return None if tokenizer is None else id(tokenizer)


def _load_lean(source: Source, mode: str, draft_vocab: int, tokenizer=None):
    """specx's lean decoder on a GGUF file or safetensors folder as it is (decoder/lm.py), memoised per process (one
    given another model's tokenizer apart from one with its own: their chat templates may differ)."""
    from ..decoder import linear
    from ..decoder.lm import load
    from ..progress import library_calls

    packs = linear.packer(mode) is not None   # SPECX_PACK may change within a process
    key = (str(source.path), "native", mode, draft_vocab, _given(tokenizer), packs)
    if key not in _LOADED:
        with library_calls():
            lm = load(source.path, draft_vocab=draft_vocab, mode=mode, tokenizer=tokenizer)
        lm.name = source.name
        _LOADED[key] = lm
    return _LOADED[key].fresh()


def _load_dense(source: Source, device: str, dtype: str, context: int, draft_vocab: int, blocks: bool = False,
                tokenizer=None):
    """specx's CUDA decoder (decoder/dense_lm.py) on a GGUF file or safetensors folder, memoised per process;
    `blocks`: a GGUF's matrices kept in their blocks (gpu/blocks.py)."""
    from ..decoder.dense_lm import load
    from ..progress import library_calls

    key = (str(source.path), "dense", device, dtype, context, draft_vocab, blocks, _given(tokenizer))
    if key not in _LOADED:
        with library_calls():
            lm = load(source.path, device, dtype, context=context, draft_vocab=draft_vocab, blocks=blocks,
                      tokenizer=tokenizer)
        lm.name = source.name
        _LOADED[key] = lm
    return _LOADED[key].fresh()


def _from_pretrained(source: Source, folder: Path, dtype: str, placed: dict, with_tokenizer: bool = True):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    placed = {**placed, "dtype": torch_dtype(dtype)}
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False, **placed)
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False) if with_tokenizer else None
    except ValueError as e:
        raise ModelUnavailable(f"cannot load {source.name}: {e}",
                               "specx supports the architectures transformers implements natively") from None
    except BrokenPipeError:
        raise   # a progress bar on a closed stderr, not a bad file
    except OSError as e:
        raise ModelFileError(f"cannot read {source.name}: {e}") from None
    model.eval()
    return model, tokenizer
