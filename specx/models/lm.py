"""A causal LM with its own KV cache: feed tokens, get logits, crop back to a length."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from ..decoder.held import Held
from ..progress import quiet


@dataclass
class LM:
    """A transformers model + tokenizer with one growing KV cache (batch of one)."""

    model: object
    tokenizer: object
    name: str
    n_params: int = 0
    kernels: str = ""
    vocab: int = 0                # rows of the full output layer (before any VocabTrim)
    keep_ids: object = None       # VocabTrim: the ids the output layer still scores, else None
    weights: str = "none"         # CPU weight precision (fastpath.py)
    cache: object = None
    forward_s: float = 0.0
    placement: str = ""           # the memory plan's one line, e.g. "target 62% gpu / 38% cpu, drafter gpu"
    experts: object = None        # the MoE expert cache (memory/experts.py) when experts are offloaded
    record: Held = field(default_factory=Held, init=False, repr=False)   # which tokens the cache holds (held.py)

    trees = "transformers' models verify chains only (token trees need the lean decoder)"   # see LeanLM.trees

    def __post_init__(self):
        self.n_params = self.n_params or sum(p.numel() for p in self.model.parameters())
        self.vocab = self.vocab or int(self.model.get_output_embeddings().weight.size(0))
        self.reset()

    def fresh(self) -> "LM":
        """Another handle on the same weights, with its own empty cache."""
        return replace(self, cache=None, forward_s=0.0)

    def reset(self) -> None:
        """Forget everything cached."""
        from transformers import DynamicCache

        # No config: every layer keeps all positions, so a sliding-window layer can still be cropped.
        self.cache = DynamicCache()
        self.record.clear()

    @property
    def cached(self) -> int:
        """Tokens whose keys and values are in the cache."""
        return self.cache.get_seq_length()

    @property
    def held(self) -> list[int]:
        """The tokens the cache holds (decoder/held.py): what the next answer may keep of its prompt."""
        return self.record.upto(self.cached)

    @property
    def device(self):
        """Where input ids go: the embedding's device, or where accelerate runs an offloaded one."""
        embedding = self.model.get_input_embeddings()
        run_on = getattr(getattr(embedding, "_hf_hook", None), "execution_device", None)
        return torch.device(run_on) if run_on is not None else embedding.weight.device

    @property
    def max_context(self) -> int:
        cfg = self.model.config
        return int(getattr(cfg, "max_position_embeddings", None) or 2048)

    @property
    def vocab_size(self) -> int:
        """Rows of the full output layer (may exceed the tokenizer's length: padding)."""
        return self.vocab

    @property
    def eos_ids(self) -> frozenset[int]:
        """Every id that ends a turn: generation config and tokenizer."""
        ids: set[int] = set()
        for value in (getattr(self.model.generation_config, "eos_token_id", None),
                      getattr(self.tokenizer, "eos_token_id", None)):
            if isinstance(value, int):
                ids.add(value)
            elif value:
                ids.update(int(v) for v in value)
        return frozenset(ids)

    @torch.inference_mode()
    def forward(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        """Append ids to the cache; (T, V) logits, or (1, V) for the last position only."""
        t, start = time.perf_counter(), self.cached
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        try:
            with quiet():
                out = self.model(input_ids=x, **{_cache_argument(self.model): self.cache}, use_cache=True,
                                 logits_to_keep=1 if last_only else 0)
        except BaseException:
            # cut short (Ctrl-C inside torch), some layers of the cache may hold these ids and others not, and a
            # crop then removes as many from each: nothing it holds is claimed until it is reset
            self.record.crop(0)
            raise
        logits = out.logits[0]
        self.record.wrote(start, ids)
        if x.device.type == "cuda":   # kernels run asynchronously: time them, not their launch
            torch.cuda.synchronize(x.device)
        self.forward_s += time.perf_counter() - t
        return logits

    def crop(self, length: int) -> None:
        """Drop cached positions beyond `length`."""
        extra = self.cached - length
        if extra > 0:
            self.cache.crop(-extra)
        self.record.crop(length)


def _cache_argument(model) -> str:
    """The name transformers' forward takes the cache by: `cache` (newer 5.x; `past_key_values` warns
    there and goes away in 5.40), else `past_key_values`."""
    import inspect

    kind = type(model)
    if kind not in _CACHE_ARGUMENT:
        params = inspect.signature(kind.forward).parameters
        _CACHE_ARGUMENT[kind] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_ARGUMENT[kind]


_CACHE_ARGUMENT: dict[type, str] = {}
