"""LeanLM: the lean decoder behind the LM interface the engine drives (runtime/lm.py's LM), and `load`
for a GGUF file or a Hugging Face safetensors folder."""
from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..cpu import attention, layers, packing, quant
from . import config as configs
from . import linear
from . import resident
from . import weights as weight_files
from .gguf_file import open_gguf
from .held import Held
from .tokenizer import load_tokenizer
from .model import Cache, Decoder


@dataclass
class LeanLM:
    """A Decoder + tokenizer with one KV cache (batch of one); the same attributes and methods as runtime.lm.LM."""

    model: Decoder
    tokenizer: object
    name: str
    eos: frozenset[int] = frozenset()
    n_params: int = 0
    kernels: str = ""
    vocab: int = 0                # rows of the full output layer (before any VocabTrim)
    head: object = None           # VocabTrim (a drafter's): the vocabtrim.DraftHead it scores, else None
    trim: object = None           # ... or the fixed ids a trimmed output layer scores (the dense decoder's)
    weights: str = ""             # the matrices' formats as the file holds them, e.g. "Q4_K/Q6_K"
    cache: Cache | None = None
    forward_s: float = 0.0        # time spent in forward(), for the loop's overhead figure
    placement: str = ""
    experts: object = None        # never: the lean decoder runs dense models only
    record: Held = field(default_factory=Held, init=False, repr=False)   # which tokens the cache holds (held.py)

    def __post_init__(self):
        w = self.model.weights
        self.n_params = self.n_params or sum(m.rows * m.cols for m in w.matrices()) + sum(
            p.numel() for p in self.model.parameters())
        self.vocab = self.vocab or self.model.config.vocab_size
        self.weights = self.weights or w.types()
        self.cache = self.model.new_cache()

    def fresh(self) -> "LeanLM":
        """Another handle on the same weights, with its own empty cache."""
        return dataclasses.replace(self, cache=None, forward_s=0.0)

    def reset(self) -> None:
        """Forget everything cached."""
        self.crop(0)

    @property
    def keep_ids(self) -> torch.Tensor | None:
        """VocabTrim: the ids its logit columns are (DraftHead.ids, growing with the context), else None."""
        return self.trim if self.head is None else self.head.ids

    @property
    def cached(self) -> int:
        """Tokens whose keys and values are in the cache (none before a cache is allocated)."""
        return 0 if self.cache is None else self.cache.length

    @property
    def held(self) -> list[int]:
        """The tokens the cache's first slots hold as plain decoding of them would (held.py): what the next
        answer may keep of its prompt."""
        return self.record.upto(self.cached)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def max_context(self) -> int:
        return self.model.context

    @property
    def vocab_size(self) -> int:
        """Rows of the full output layer (may exceed the tokenizer's length: padding)."""
        return self.vocab

    @property
    def eos_ids(self) -> frozenset[int]:
        return self.eos

    def forward(self, ids: list[int], last_only: bool = False, positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """Append ids to the cache; (T, V) logits, or (1, V) for the last position only. `positions` and
        `mask`: a token tree's rotary positions and (T, T) ancestry, or (T, m + T) where the tree's first nodes
        are the last m cached slots (engine/tree.py; Decoder.forward)."""
        t, start = time.perf_counter(), self.cached
        logits = self._logits(ids, last_only, positions, mask)
        self.record.wrote(start, ids, tree=mask is not None or positions is not None)
        self.forward_s += time.perf_counter() - t
        return logits

    def _logits(self, ids: list[int], last_only: bool, positions=None, mask=None) -> torch.Tensor:
        head = None if self.head is None else self.head.weights()
        return self.model.forward(self.cache, ids, positions, mask, last_only=last_only, head=head)

    def crop(self, length: int) -> None:
        """Drop cached positions beyond `length`."""
        if self.cache is not None:
            self.cache.crop(length)
        self.record.crop(length)

    def compact(self, start: int, slots: list[int]) -> None:
        """Keep the cached slots `slots` (ascending, from `start` on: a verified tree's accepted path) at
        start, start+1, …; forget everything after them."""
        self.cache.compact(start, slots)
        self.record.compact(start, slots)

    @property
    def trees(self) -> str:
        """Why this model cannot verify a token tree ("" where it can)."""
        return ""


def load(path: str | Path, *, context: int | None = None, draft_vocab: int = 0, mode: str = "f32",
         tokenizer=None) -> LeanLM:
    """A GGUF file or a safetensors folder as a LeanLM. UnsupportedArchitecture: run transformers' model instead.
    `context`: cache positions (default model.DEFAULT_CONTEXT or the model's own, the smaller);
    `draft_vocab` > 0 keeps that many output rows (VocabTrim; drafters only); `mode`: the linear kernels'
    activation mode (cpu/quant.py: "f32" exact, "q8" int8 activations; "q4", drafters only: q8 with the wider
    layer matrices re-encoded to Q4_0, decoder/reencode.py); `tokenizer`: read's."""
    lower, mode = mode == "q4", "q8" if mode == "q4" else mode
    pack = linear.packer(mode)
    f = read(path, huge_pages=resident.copies(pack is not None), reencode=lower, output=not draft_vocab,
             tokenizer=tokenizer, pack=pack)
    activations = ("float32 activations: exact" if mode == "f32" else
                   quant.q8_words(f.weights.types(), quant.available() and quant._default().q8_groups()))
    amx = linear.prompt_note(f.weights.types(), mode)
    activations += f", {amx}" if amx else ""
    held = f", {resident.describe()}" if f.huge_pages else ""
    packed = [m.name for m in f.weights.matrices() if m.packed]
    held += f", {packing.describe(packed)}" if packed else ""
    blocks = (f"{f.weights.types()} blocks{f.reencoded}" if f.reencoded else
              f"the file's {f.weights.types()} as they are")
    kernels = (f"kernels: specx lean decoder on {blocks}{held}, {linear.describe()}, "
               f"{activations}; {attention.describe()}, {layers.describe()}")
    head = None
    if draft_vocab:
        from . import vocabtrim

        usable = min(len(f.tokenizer), f.config.vocab_size)
        head = vocabtrim.DraftHead(f.weights.output, vocabtrim.keep_ids(f.tokenizer, usable, draft_vocab), usable)
        if not f.weights.output.data.flags.writeable:   # the file's map, its kept rows copied: its pages leave
            resident.release(f.weights.output.data)
        kernels += f", {vocabtrim.describe(head.base, f.config.vocab_size, context=True)}"
    return LeanLM(Decoder(f.config, f.weights, context, mode), f.tokenizer, f.name, eos=f.eos, kernels=kernels,
                  vocab=f.config.vocab_size, head=head)


@dataclass(frozen=True)
class ModelFiles:
    """What a GGUF file or safetensors folder holds for a decoder (the CPU's or the dense one)."""

    config: object
    weights: object
    tokenizer: object
    eos: frozenset[int]
    name: str
    keep: object = None   # VocabTrim's kept ids, else None
    huge_pages: bool = False   # the matrices were copied, to 2 MiB pages where offered (resident.py)
    reencoded: str = ""        # the kernels sentence's part on layers re-encoded to Q4_0 (reencode.py), or ""

    def trimmed(self) -> str:
        """The kernels sentence's VocabTrim part ("" without it)."""
        if self.keep is None:
            return ""
        from . import vocabtrim

        return f", {vocabtrim.describe(self.keep, self.config.vocab_size)}"


def read(path: str | Path, draft_vocab: int = 0, huge_pages: bool = False, reencode: bool = False,
         output: bool = True, tokenizer=None, pack=None) -> ModelFiles:
    """Config, weights (the output layer trimmed to `draft_vocab` rows when > 0), tokenizer and end ids.
    `huge_pages`: the matrices copied (to 2 MiB pages where offered) while the tokenizer loads (resident.py), the
    output layer too unless `output` is False; `reencode`: a drafter's wider layer matrices re-encoded to Q4_0 first
    (reencode.py); `tokenizer`: one already built for this vocabulary (a drafter's, its target's: see
    models/resolve.same_tokenizer), used instead of building a second; `pack`: with `huge_pages`, the kernel
    build that packs the layers' Q4_0, Q4_K and Q6_K matrices as they are copied (cpu/packing.py), else None."""
    path = Path(path)
    config, weights, tokenizer, eos, moved, said = (_from_folder if path.is_dir() else _from_gguf)(
        path, huge_pages, reencode, output, tokenizer, pack)
    keep = None
    if draft_vocab:
        from . import vocabtrim

        keep = vocabtrim.keep_ids(tokenizer, min(len(tokenizer), config.vocab_size), draft_vocab)
        weights = dataclasses.replace(weights, output=linear.take_rows(weights.output, keep.tolist()))
    return ModelFiles(config, weights, tokenizer, frozenset(eos), path.stem if path.is_file() else path.name, keep,
                      moved, f" ({said})" if said else "")


def _lower(weights, reencode: bool):
    """The weights, their wider layers re-encoded to Q4_0 where asked, and what the kernels sentence says of it."""
    if not reencode:
        return weights, ""
    from . import reencode as lower

    low = lower.reencode(weights)
    return low, lower.describe(weights, low)


def _from_gguf(path: Path, huge_pages: bool, reencode: bool = False, output: bool = True, tokenizer=None,
               pack=None):
    gguf = open_gguf(path)
    shapes = {name: info.shape for name, info in gguf.tensors.items()}
    freqs = gguf.array("rope_freqs.weight") if "rope_freqs.weight" in gguf.tensors else None
    config = configs.from_gguf(gguf.meta, shapes, freqs)
    weights, said = _lower(weight_files.from_gguf(gguf, config), reencode)
    move = resident.Move(weights, output, pack) if huge_pages else None
    tokenizer = load_tokenizer(gguf) if tokenizer is None else tokenizer
    moved = move.result() if move else weights
    eos = {tokenizer.eos_token_id, gguf.meta.get("tokenizer.ggml.eos_token_id")}
    return config, moved, tokenizer, {int(i) for i in eos if i is not None}, moved is not weights, said


def _from_folder(path: Path, huge_pages: bool, reencode: bool = False, output: bool = True, tokenizer=None,
                 pack=None):
    from transformers import AutoConfig, AutoTokenizer

    config = configs.from_hf(AutoConfig.from_pretrained(path, trust_remote_code=False))
    weights, said = _lower(weight_files.from_safetensors(path, config), reencode)
    move = resident.Move(weights, output, pack) if huge_pages else None
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False) if tokenizer is None else tokenizer
    moved = move.result() if move else weights
    eos = {tokenizer.eos_token_id}
    generation = path / "generation_config.json"
    if generation.is_file():
        value = json.loads(generation.read_text(encoding="utf-8")).get("eos_token_id")
        eos.update([value] if isinstance(value, int) else value or [])
    return config, moved, tokenizer, {int(i) for i in eos if i is not None}, moved is not weights, said
