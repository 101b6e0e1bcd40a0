"""Speculative verification: accept a prefix of the draft, then choose the next token.

Letters once (Leviathan et al. 2023): p is the target distribution, q the drafter's.
Here they are named `target_probs` and `draft_probs`; a deterministic drafter (n-gram)
passes no draft_probs, which means a one-hot q on the drafted token.
"""
from __future__ import annotations

import torch

from .sampling import greedy, sample


def verify_greedy(target_logits: torch.Tensor, draft_tokens: torch.Tensor) -> tuple[int, int]:
    """(k+1, V), (k,) -> (accepted, next): accept while the draft equals the target's argmax."""
    choice = greedy(target_logits).cpu()                # (k+1,): one small copy when the logits are on a GPU
    k = draft_tokens.shape[0]
    mismatch = (choice[:k] != draft_tokens).nonzero()
    n = int(mismatch[0, 0]) if mismatch.numel() else k
    return n, int(choice[n])


def accept_probability(target_probs: torch.Tensor, draft_probs: torch.Tensor | None,
                       token: int) -> torch.Tensor:
    """min(1, p(x)/q(x)) for one position; q one-hot when draft_probs is None."""
    p = target_probs[token]
    if draft_probs is None:
        return p.clamp(max=1.0)
    q = draft_probs[token]
    return torch.clamp(p / q, max=1.0) if q > 0 else torch.ones_like(p)


def residual(target_probs: torch.Tensor, draft_probs: torch.Tensor | None, token: int) -> torch.Tensor:
    """norm(max(p − q, 0)): the law of the replacement token after a rejection."""
    if draft_probs is None:
        res = target_probs.clone()
        res[token] = 0.0
    else:
        res = torch.clamp(target_probs - draft_probs, min=0.0)
    total = res.sum()
    if total <= 0:  # only reachable through rounding when p == q; p itself is then the right law
        return target_probs
    return res / total


def verify_sampled(target_probs: torch.Tensor, draft_tokens: torch.Tensor,
                   draft_probs: torch.Tensor | None, generator: torch.Generator | None) -> tuple[int, int]:
    """(k+1, V), (k,), (k, V)|None -> (accepted, next); the output follows the target law exactly."""
    k = draft_tokens.shape[0]
    coins = torch.rand(k, generator=generator, dtype=torch.float64)
    for i in range(k):
        token = int(draft_tokens[i])
        q_i = None if draft_probs is None else draft_probs[i]
        if coins[i] < accept_probability(target_probs[i], q_i, token):
            continue
        res = residual(target_probs[i], q_i, token)
        return i, int(sample(res.unsqueeze(0), generator)[0])
    return k, int(sample(target_probs[k].unsqueeze(0), generator)[0])
