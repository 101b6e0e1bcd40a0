"""DenseLM: the dense decoder (dense.py) behind the LM interface the engine drives (decoder/lm.py's LeanLM),
replaying CUDA graphs (graphs.py) on a GPU; and `load` for a GGUF file or safetensors folder onto a device."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .dense import DenseCache, DenseDecoder, from_weights

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass
class DenseLM:
    """A DenseDecoder + tokenizer with one KV cache (batch of one), allocated at its first forward."""

    model: DenseDecoder
    tokenizer: object
    name: str
    eos: frozenset[int] = frozenset()
    n_params: int = 0
    kernels: str = ""
    vocab: int = 0                # rows of the full output layer (before any VocabTrim)
    keep_ids: object = None       # VocabTrim: the ids the output layer still scores, else None
    weights: str = ""             # the matrices' formats in the file, e.g. "Q4_K/Q6_K"
    cache: DenseCache | None = None
    forward_s: float = 0.0        # time spent in forward() (kernels included: it waits for them)
    placement: str = ""
    experts: object = None        # never: dense models only
    use_graphs: bool = True       # on a CUDA device: replay captured graphs (graphs.py)
    graphs: object = None

    def __post_init__(self):
        self.n_params = self.n_params or sum(m.numel() for m in self.model.weights.matrices())
        self.vocab = self.vocab or self.model.config.vocab_size

    def fresh(self) -> "DenseLM":
        """Another handle on the same weights, with its own (not yet allocated) cache and graphs."""
        return dataclasses.replace(self, cache=None, graphs=None, forward_s=0.0)

    def reset(self) -> None:
        if self.cache is not None:
            self.cache.crop(0)

    @property
    def cached(self) -> int:
        return 0 if self.cache is None else self.cache.length

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def max_context(self) -> int:
        return self.model.context

    @property
    def vocab_size(self) -> int:
        return self.vocab

    @property
    def eos_ids(self) -> frozenset[int]:
        return self.eos

    def forward(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        """Append ids to the cache; (T, V) logits, or (1, V) for the last position only (a copy of them)."""
        t = time.perf_counter()
        if self.cache is None:
            self.cache = self.model.new_cache()
        if self.device.type == "cuda" and self.use_graphs:
            if self.graphs is None:
                from .graphs import Graphs

                self.graphs = Graphs(self.model, self.cache)
            logits = self.graphs.forward(ids)
            logits = (logits[-1:] if last_only else logits).clone()
            torch.cuda.current_stream(self.device).synchronize()   # time the kernels, not their launch
        else:
            logits = self.model.forward(self.cache, ids, last_only=last_only)
        self.forward_s += time.perf_counter() - t
        return logits

    def crop(self, length: int) -> None:
        if self.cache is not None:
            self.cache.crop(length)


def load(path: str | Path, device, dtype: str = "bfloat16", *, context: int | None = None,
         draft_vocab: int = 0, use_graphs: bool = True) -> DenseLM:
    """A GGUF file or safetensors folder as a DenseLM on `device`, its matrices dequantized once to `dtype`."""
    from . import linear
    from .lm import _from_folder, _from_gguf

    path = Path(path)
    config, weights, tokenizer, eos = _from_folder(path) if path.is_dir() else _from_gguf(path)
    keep = None
    if draft_vocab:
        from . import vocabtrim

        keep = vocabtrim.keep_ids(tokenizer, min(len(tokenizer), config.vocab_size), draft_vocab)
        weights = dataclasses.replace(weights, output=linear.take_rows(weights.output, keep.tolist()))
    formats = weights.types()
    torch_dtype = DTYPES[dtype]
    dense = from_weights(weights, torch_dtype, torch.device(device))
    lm = DenseLM(DenseDecoder(config, dense, context), tokenizer, path.stem if path.is_file() else path.name,
                 eos=frozenset(eos), vocab=config.vocab_size, keep_ids=keep, weights=formats, use_graphs=use_graphs)
    lm.kernels = describe(lm, formats)
    if keep is not None:
        from . import vocabtrim

        lm.kernels += f", {vocabtrim.describe(keep, config.vocab_size)}"
    return lm


def describe(lm: DenseLM, formats: str) -> str:
    """The kernels sentence."""
    from .graphs import MAX_ROWS

    dtype = str(lm.model.dtype).removeprefix("torch.")
    where = f"on {lm.device.type}"
    graphs = ""
    if lm.device.type == "cuda":
        where = f"on {torch.cuda.get_device_name(lm.device)}"
        graphs = f", CUDA graphs for T=1..{MAX_ROWS} (each captured on first use)" if lm.use_graphs else \
            ", no CUDA graphs (eager)"
    name = "CUDA" if lm.device.type == "cuda" else "dense"
    return f"kernels: specx {name} decoder, {dtype} weights {where} (the file's {formats} dequantized once){graphs}"
