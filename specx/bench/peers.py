"""How each configuration generates one prompt: specx's own stream, or transformers' generate as a peer.

The peers run on the very models specx loaded (`load_lm` is memoised per path and dtype), so the
weights, dtype and CPU kernels are the same as specx's rows: only the decoding algorithm differs.
"""
from __future__ import annotations

import copy
import resource
import time

from ..runtime.errors import UsageError
from ..runtime.types import Done, Round, Sampling
from ..runtime.tuned import split_hybrid
from .runner import Config, Sample
from .suite import Prompt

PEERS = {"hf": ("hf-assisted", "hf-lookup"), "hf-assisted": ("hf-assisted",), "hf-lookup": ("hf-lookup",)}
LOOKUP_TOKENS = 10   # prompt_lookup_num_tokens, as transformers' documentation shows it


def describe_pair(pair, dtype: str) -> tuple[str, int]:
    """The precision sentence of a row, and the bytes of the weights it uses (target + drafter),
    specx's packed CPU linears included (their weights are not parameters)."""
    from ..runtime.models import dtype_name

    lms = [pair.target] + ([pair.drafter.lm] if hasattr(pair.drafter, "lm") else [])
    weights = sum(_weight_bytes(lm.model) for lm in lms)
    kinds = "/".join(sorted({str(p.dtype).removeprefix("torch.") for lm in lms for p in lm.model.parameters()}))
    packed = "/".join(sorted({m.precision for lm in lms for m in lm.model.modules() if getattr(m, "precision", "")}))
    what = f"{packed} linear weights, {kinds} others" if packed else f"{kinds} weights"
    kernels = f"; {pair.target.kernels.split(' (')[0]}" if pair.target.kernels else ""
    return f"{dtype_name(dtype)} ({what}{kernels})", weights


def _weight_bytes(model) -> int:
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return params + sum(m.weight_bytes for m in model.modules() if hasattr(m, "weight_bytes"))


def specx_call(model: str, pair, config: Config, sampling: Sampling):
    """A function (prompt, max_tokens) -> Sample running specx's stream on the prepared pair."""
    from ..runtime.api import stream

    def go(prompt: Prompt, max_tokens: int) -> Sample:
        tokens: list[int] = []
        generation = stream(model, prompt.text, pair=pair, max_tokens=max_tokens, temperature=sampling.temperature,
                            top_p=sampling.top_p, top_k=sampling.top_k, seed=sampling.seed,
                            draft_policy=config.policy, confidence=config.confidence,
                            guard=config.tuned)
        stats = None
        for event in generation:
            if isinstance(event, Round):
                tokens.extend(event.token_ids)
            elif isinstance(event, Done):
                stats = event.stats
        return Sample(config.label, prompt.name, prompt.category, 0, stats.new_tokens, stats.total_s,
                      stats.first_token_s, stats.draft_s, stats.verify_s, stats.rounds, stats.drafted, stats.accepted,
                      list(stats.accepted_at), list(stats.drafted_at), stats.peak_bytes, tuple(tokens))
    return go


def full_vocabulary(lm, ref: str, dtype: str):
    """The drafter as transformers needs it: the same weights and kernels, every output row (its
    assisted generation reads the assistant's logits as token ids, so a VocabTrim head cannot serve)."""
    from ..runtime.models import load_lm, resolve

    if lm.keep_ids is None:
        return lm
    return load_lm(resolve(ref), dtype, lm.weights, 0)


def peer_configs(names: list[str], configs: list[Config]) -> list[Config]:
    """Rows for `--peer hf`: prompt lookup always, assisted generation when a model drafter is benchmarked."""
    out = []
    for name in names:
        if name not in PEERS:
            raise UsageError(f"unknown peer {name!r}", f"use one of: {', '.join(PEERS)}")
        model_drafters = [c.drafter for c in configs if not c.peer and c.drafter not in ("none", "ngram")]
        if model_drafters and "hf-assisted" in PEERS[name]:
            out.append(Config(split_hybrid(model_drafters[0])[0], peer="hf-assisted"))
        if "hf-lookup" in PEERS[name]:
            out.append(Config("ngram", peer="hf-lookup"))
    return out


def peer_call(config: Config, pairs: dict, sampling: Sampling, dtype: str):
    """(call, precision, weight bytes) for a transformers peer on the weights specx already loaded."""
    if not sampling.greedy:
        raise UsageError("the transformers peers are measured greedy only", "drop --temperature with --peer")
    base = next(p for c, p in pairs.items() if c.baseline)
    model = base.target.model
    kwargs: dict = {}
    assistant = None
    if config.peer == "hf-assisted":
        drafted = next(p for c, p in pairs.items()
                       if split_hybrid(c.drafter)[0] == config.drafter and hasattr(p.drafter, "lm"))
        assistant = full_vocabulary(drafted.drafter.lm, config.drafter, dtype)
        kwargs["assistant_model"] = assistant.model
        precision, weights = describe_pair(drafted, dtype)
    else:
        kwargs["prompt_lookup_num_tokens"] = LOOKUP_TOKENS
        precision, weights = describe_pair(base, dtype)
    tokenizer, eos = base.target.tokenizer, base.target.eos_ids
    fresh_config = copy.deepcopy(assistant.model.generation_config) if assistant is not None else None

    def go(prompt: Prompt, max_tokens: int) -> Sample:
        import torch

        from ..runtime.api import prompt_ids

        ids = torch.tensor([prompt_ids(tokenizer, prompt.text)], device=base.target.device)
        if assistant is not None:   # transformers adapts the draft length in place and keeps it across calls
            assistant.model.generation_config = copy.deepcopy(fresh_config)
        t = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens,
                                 do_sample=False, temperature=None, top_p=None, top_k=None,
                                 pad_token_id=min(eos) if eos else None, **kwargs)
        total = time.perf_counter() - t
        new = out[0, ids.shape[1]:].tolist()
        new = new[:next((i for i, tok in enumerate(new) if tok in eos), len(new))]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return Sample(config.label, prompt.name, prompt.category, 0, len(new), total, peak_bytes=peak,
                      tokens=tuple(new))
    return go, f"{precision}; transformers generate", weights
