"""DenseLM: the dense decoder (dense.py) behind the LM interface the engine drives (decoder/lm.py's LeanLM),
replaying CUDA graphs (graphs.py) on a GPU; and `load` for a GGUF file or safetensors folder onto a device."""
from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import torch

from .dense import DenseDecoder
from .dense_weights import from_weights
from .lm import LeanLM, read

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass
class DenseLM(LeanLM):
    """LeanLM's interface on a DenseDecoder: its cache (device memory) allocated at the first forward, CUDA
    graphs replayed on a GPU."""

    use_graphs: bool = True       # on a CUDA device: replay captured graphs (graphs.py)
    graphs: object = None

    def __post_init__(self):
        self.n_params = self.n_params or sum(m.numel() for m in self.model.weights.matrices())
        self.vocab = self.vocab or self.model.config.vocab_size

    def fresh(self) -> "DenseLM":
        """Another handle on the same weights, with its own (not yet allocated) cache and graphs."""
        return dataclasses.replace(self, cache=None, graphs=None, forward_s=0.0)

    @property
    def device(self) -> torch.device:
        return self.model.device

    def skipping(self, ids: list[int], skip: Collection[int], last_only: bool = True) -> torch.Tensor:
        """A self-draft's forward (drafters/self.py): ids appended to the cache with the layers `skip` left
        out, replayed from graphs of their own on a GPU. Not counted in forward_s: the drafter times it."""
        return self._logits(ids, last_only, skip=skip)

    def _logits(self, ids: list[int], last_only: bool, positions=None, mask=None, skip=()) -> torch.Tensor:
        """(a copy of the graph's output buffer on a GPU, waited for: forward_s times the kernels)"""
        if self.cache is None:
            self.cache = self.model.new_cache()
        if self.device.type != "cuda" or not self.use_graphs:
            return self.model.forward(self.cache, ids, positions, mask, skip, last_only=last_only)
        if self.graphs is None:
            from .graphs import Graphs

            self.graphs = Graphs(self.model, self.cache)
        logits = self.graphs.forward(ids, positions, mask, skip)
        logits = (logits[-1:] if last_only else logits).clone()
        torch.cuda.current_stream(self.device).synchronize()
        return logits


def load(path: str | Path, device, dtype: str = "bfloat16", *, context: int | None = None,
         draft_vocab: int = 0, use_graphs: bool = True, blocks: bool = False, tokenizer=None) -> DenseLM:
    """A GGUF file or safetensors folder as a DenseLM on `device`, its matrices dequantized once to `dtype`, or
    with `blocks` (a GGUF) kept in their blocks (gpu/blocks.py) and run by the block kernels (gpu/qmatmul.py);
    `tokenizer`: lm.read's."""
    f = read(path, draft_vocab, tokenizer=tokenizer)
    formats = f.weights.types()
    dense = from_weights(f.weights, DTYPES[dtype], torch.device(device), blocks=blocks)
    lm = DenseLM(DenseDecoder(f.config, dense, context), f.tokenizer, f.name, eos=f.eos, vocab=f.config.vocab_size,
                 trim=f.keep, weights=formats, use_graphs=use_graphs)
    lm.kernels = describe(lm, formats) + f.trimmed()
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
    held = lm.model.weights.formats()
    if held:
        from ..gpu.qmatmul import describe as blocks

        kernels = blocks(held, lm.device.type == "cuda")
        return f"kernels: specx {name} decoder {where}, the file's {formats} as they are: {kernels}, {dtype} " \
               f"activations{graphs}"
    return f"kernels: specx {name} decoder, {dtype} weights {where} (the file's {formats} dequantized once){graphs}"
