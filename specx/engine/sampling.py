"""Logits to probabilities and tokens: temperature, top-k, top-p; greedy is argmax."""
from __future__ import annotations

import torch


class BadLogits(ValueError):
    """Logits with NaN or +inf cannot define a distribution."""


def check_logits(logits: torch.Tensor) -> torch.Tensor:
    """Refuse NaN and +inf (−inf is a legitimate mask)."""
    if torch.isnan(logits).any() or torch.isposinf(logits).any():
        raise BadLogits("the model produced NaN or +inf logits")
    return logits


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """(…, V) -> (…,): the highest logit, first index on ties."""
    return logits.argmax(dim=-1)


def warp(logits: torch.Tensor, temperature: float, top_k: int | None = None,
         top_p: float | None = None) -> torch.Tensor:
    """(N, V) logits -> (N, V) float32 probabilities after temperature, top-k, then top-p."""
    if temperature <= 0:
        raise ValueError("warp needs temperature > 0; greedy decoding uses argmax")
    scores = check_logits(logits).float() / temperature
    if top_k is not None and 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        scores = _top_p_mask(scores, top_p)
    if torch.isneginf(scores).all(dim=-1).any():
        raise BadLogits("every token is masked: no distribution left to sample")
    return torch.softmax(scores, dim=-1)


def _top_p_mask(scores: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p (always at least one)."""
    sorted_scores, order = torch.sort(scores, dim=-1, descending=True)
    cum = torch.softmax(sorted_scores, dim=-1).cumsum(dim=-1)
    drop_sorted = (cum - torch.softmax(sorted_scores, dim=-1)) >= top_p  # mass before this token already enough
    drop_sorted[..., 0] = False  # the most likely token always stays, even for top_p <= 0
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """(N, V) probabilities -> (N,) tokens drawn with the given generator."""
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
