"""MoE expert offload: experts live in CPU memory (pinned on CUDA), a byte-budgeted LRU cache of them
sits on the compute device, filled on demand from the router's choice, with next-layer prefetch.

For the fused-expert layers of transformers 5 (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE): each layer's
`experts` module is replaced by `CachedExperts`, which gathers the experts the router picked into a
compact stack (ids remapped in ascending order, so the grouping and summation order are unchanged)
and runs the model's own experts implementation on it: the outputs are the resident model's, bit
for bit. The budget bounds the cache; one forward also holds the stack of its own experts.
"""
from __future__ import annotations

import types
from collections import OrderedDict
from dataclasses import dataclass

import torch

_COPIED = ("act_fn", "config", "has_gate", "has_bias", "is_transposed", "is_concatenated",
           "has_post_expert_norm", "_is_expert_parallel", "hidden_dim", "intermediate_dim")


@dataclass
class ExpertStats:
    hits: int = 0
    misses: int = 0
    prefetches: int = 0            # experts fetched ahead of their layer
    prefetch_used: int = 0         # prefetched experts that a later forward used
    bytes_moved: int = 0
    peak_bytes: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hits / max(self.hits + self.misses, 1)

    def as_dict(self) -> dict:
        return {**self.__dict__, "hit_rate": self.hit_rate}


class ExpertCache:
    """Byte-budgeted LRU of (layer, expert) → (gate_up, down) on the compute device."""

    def __init__(self, budget_bytes: int, device):
        self.budget, self.device = int(budget_bytes), torch.device(device)
        self.slots: OrderedDict[tuple[int, int], list] = OrderedDict()   # key → [tensors, prefetched, used]
        self.used = 0
        self.stats = ExpertStats()

    def get(self, key: tuple[int, int], store: tuple[torch.Tensor, ...], prefetch: bool = False):
        entry = self.slots.get(key)
        if entry is not None:
            self.slots.move_to_end(key)
            if not prefetch:
                self.stats.hits += 1
                if entry[1] and not entry[2]:
                    self.stats.prefetch_used += 1
                entry[2] = True
            return entry[0]
        size = sum(t[key[1]].nbytes for t in store)
        while self.slots and self.used + size > self.budget:
            _, (old, _, _) = self.slots.popitem(last=False)
            self.used -= sum(t.nbytes for t in old)
        tensors = tuple(t[key[1]].to(self.device, copy=True, non_blocking=True) for t in store)
        self.stats.bytes_moved += size
        if prefetch:
            self.stats.prefetches += 1
        else:
            self.stats.misses += 1
        if size <= self.budget:                       # an expert larger than the budget is used, not kept
            self.slots[key] = [tensors, prefetch, not prefetch]
            self.used += size
            self.stats.peak_bytes = max(self.stats.peak_bytes, self.used)
        return tensors


class CachedExperts(torch.nn.Module):
    """Drop-in for a fused experts module whose weights stay in CPU memory."""

    def __init__(self, experts: torch.nn.Module, layer: int, cache: ExpertCache):
        super().__init__()
        pin = cache.device.type == "cuda"
        self.store = tuple(_to_store(getattr(experts, n).data, pin) for n in ("gate_up_proj", "down_proj"))
        self.layer, self.cache, self.num_experts = layer, cache, experts.num_experts
        self.attrs = {k: getattr(experts, k) for k in _COPIED if hasattr(experts, k)}
        self.apply_gate = getattr(type(experts), "_apply_gate", None)
        forward = type(experts).forward
        self.eager = getattr(forward, "__wrapped__", forward)
        self.next: tuple[torch.nn.Module, CachedExperts] | None = None   # (next layer's router, experts)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        ids = torch.unique(top_k_index).tolist()                  # ascending
        fetched = [self.cache.get((self.layer, e), self.store) for e in ids]
        remap = torch.full((self.num_experts,), -1, dtype=top_k_index.dtype, device=top_k_index.device)
        remap[ids] = torch.arange(len(ids), dtype=top_k_index.dtype, device=top_k_index.device)
        compact = types.SimpleNamespace(**self.attrs, num_experts=len(ids),
                                        gate_up_proj=torch.stack([f[0] for f in fetched]),
                                        down_proj=torch.stack([f[1] for f in fetched]))
        if self.apply_gate is not None:
            compact._apply_gate = types.MethodType(self.apply_gate, compact)
        out = self._impl()(compact, hidden_states, remap[top_k_index], top_k_weights)
        self._prefetch(hidden_states)
        return out

    def _impl(self):
        from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

        name = getattr(self.attrs.get("config"), "_experts_implementation", None)
        return ALL_EXPERTS_FUNCTIONS.get_interface(name, self.eager)

    @torch.no_grad()
    def _prefetch(self, hidden_states) -> None:
        """Guess the next layer's experts by running its router on this layer's input."""
        if self.next is None:
            return
        router, experts = self.next
        _, _, indices = router(hidden_states)
        for e in torch.unique(indices).tolist():
            self.cache.get((experts.layer, e), experts.store, prefetch=True)


def _to_store(t: torch.Tensor, pin: bool) -> torch.Tensor:
    t = t.detach().to("cpu")
    return t.pin_memory() if pin else t.clone()


def offload_experts(model: torch.nn.Module, budget_bytes: int, device=None) -> ExpertCache:
    """Replace every fused experts module by a CachedExperts sharing one cache; returns the cache."""
    device = device or next(p for n, p in model.named_parameters() if "experts" not in n).device
    cache = ExpertCache(budget_bytes, device)
    blocks = [m for m in model.modules() if isinstance(getattr(m, "experts", None), torch.nn.Module)
              and hasattr(m.experts, "gate_up_proj") and hasattr(m, "gate")]
    wrapped = []
    for layer, block in enumerate(blocks):
        block.experts = CachedExperts(block.experts, layer, cache)
        wrapped.append(block)
    for here, there in zip(wrapped, wrapped[1:]):
        here.experts.next = (there.gate, there.experts)
    return cache


def expert_bytes(model: torch.nn.Module) -> int:
    """Bytes of one expert (gate_up + down) in the first MoE layer."""
    for m in model.modules():
        if hasattr(m, "gate_up_proj") and getattr(m.gate_up_proj, "dim", lambda: 0)() == 3:
            return m.gate_up_proj[0].nbytes + m.down_proj[0].nbytes
        if isinstance(m, CachedExperts):
            return sum(t[0].nbytes for t in m.store)
    raise ValueError("no fused experts in this model")
