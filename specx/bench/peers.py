"""How each configuration generates one prompt: specx's own stream, or transformers' generate as a peer.

`hf-*` peers run on the very models specx loaded (`load_lm` is memoised per path and dtype), so the
weights, dtype and CPU kernels are the same as specx's rows: only the decoding algorithm differs.
`hf-stock-*` peers run transformers as a user of it would: it loads the models itself (its own
linear layers, the drafter in the bench's dtype too), so they measure what specx changes as a whole.
"""
from __future__ import annotations

import copy
import time

from ..errors import InsufficientResources, UsageError
from ..engine.types import Done, Round, Sampling
from ..memory.probe import peak_rss_bytes
from ..policy.tuned import split_hybrid
from .runner import Config, Sample
from .suite import Prompt

GROUPS = {"hf": ("hf-assisted", "hf-lookup"), "hf-stock": ("hf-stock-generate", "hf-stock-assisted", "hf-stock-lookup")}
PEERS = {**GROUPS, **{row: (row,) for rows in GROUPS.values() for row in rows}}   # a group, or one of its rows
LOOKUP_TOKENS = 10   # prompt_lookup_num_tokens, as transformers' documentation shows it


def describe_pair(pair, dtype: str) -> tuple[str, int]:
    """The precision sentence of a row, and the bytes of the weights it uses (target + drafter),
    specx's packed CPU linears included (their weights are not parameters)."""
    from ..models.resolve import dtype_name

    drafter = getattr(pair.drafter, "lm", None)
    lms = [pair.target] + ([drafter] if drafter is not None and drafter is not pair.target else [])   # self: none
    weights = sum(_weight_bytes(lm.model) for lm in lms)
    kinds = "/".join(sorted({str(p.dtype).removeprefix("torch.") for lm in lms for p in lm.model.parameters()}))
    packed = "/".join(sorted({m.precision for lm in lms for m in lm.model.modules() if getattr(m, "precision", "")}))
    what = f"{packed} linear weights, {kinds} others" if packed else f"{kinds} weights"
    kernels = f"; {pair.target.kernels.split(' (')[0]}" if pair.target.kernels else ""
    return f"{dtype_name(dtype)} ({what}{kernels})", weights


def _weight_bytes(model) -> int:
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return params + sum(m.weight_bytes for m in model.modules() if hasattr(m, "weight_bytes"))


def specx_call(pair, config: Config, sampling: Sampling):
    """A function (prompt, max_tokens) -> Sample running specx's stream on the prepared pair."""
    from ..api import stream
    from ..options import RunOptions

    def go(prompt: Prompt, max_tokens: int) -> Sample:
        tokens: list[int] = []
        run = RunOptions(max_tokens, sampling, draft_policy=config.policy, confidence=config.confidence,
                         guard=config.tuned, tree=config.tree, reuse=False)   # each answer whole, as the peers
        generation = stream(pair, prompt.text, run)
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
    from ..memory.variant import source_for
    from ..models.resolve import load_lm

    if lm.keep_ids is None:
        return lm
    return load_lm(source_for(ref), dtype, lm.weights, 0)


def peer_configs(names: list[str], configs: list[Config]) -> list[Config]:
    """Rows for `--peer`: prompt lookup and plain generate always, assisted generation when a model
    drafter is benchmarked; each row once, whichever names asked for it."""
    out: list[Config] = []
    model_drafters = [c.drafter for c in configs if not c.peer and c.drafter not in ("none", "ngram")]
    for name in names:
        if name not in PEERS:
            raise UsageError(f"unknown peer {name!r}", f"use one of: {', '.join(PEERS)}")
        for row in PEERS[name]:
            if row.endswith("-assisted"):
                config = Config(split_hybrid(model_drafters[0])[0], peer=row) if model_drafters else None
            else:
                config = Config("ngram" if row.endswith("-lookup") else "none", peer=row)
            if config is not None and all(c.peer != row for c in out):
                out.append(config)
    return out


def peer_call(config: Config, pairs: dict, sampling: Sampling, dtype: str, model_ref: str):
    """(call, precision, weight bytes) for a transformers peer: on the weights specx already loaded
    (`hf-*`), or on transformers' own load of the same files (`hf-stock-*`)."""
    if not sampling.greedy:
        raise UsageError("the transformers peers are measured greedy only", "drop --temperature with --peer")
    base = next(p for c, p in pairs.items() if c.baseline)
    stock = config.peer.startswith("hf-stock")
    if not stock and not hasattr(base.target.model, "generate"):
        raise UsageError(f"--peer {config.peer} runs transformers' generate on the modules specx loaded, and this "
                         "target runs on specx's lean decoder, which has none",
                         "use --peer hf-stock (transformers loading the files itself), or run the pair on "
                         "transformers' models with --dtype float32")
    model = stock_model(model_ref, dtype, base.target.device) if stock else base.target.model
    kwargs: dict = {}
    assistant = None
    if config.peer.endswith("-assisted"):
        if stock:
            assistant = stock_model(config.drafter, dtype, base.target.device)
            precision, weights = stock_precision(dtype, model, assistant)
        else:
            drafted = next(p for c, p in pairs.items()
                           if split_hybrid(c.drafter)[0] == config.drafter and hasattr(p.drafter, "lm"))
            assistant = full_vocabulary(drafted.drafter.lm, config.drafter, dtype).model
            precision, weights = describe_pair(drafted, dtype)
        kwargs["assistant_model"] = assistant
    else:
        if config.peer.endswith("-lookup"):
            kwargs["prompt_lookup_num_tokens"] = LOOKUP_TOKENS
        precision, weights = stock_precision(dtype, model) if stock else describe_pair(base, dtype)
    tokenizer, eos = base.target.tokenizer, base.target.eos_ids
    fresh_config = copy.deepcopy(assistant.generation_config) if assistant is not None else None

    def go(prompt: Prompt, max_tokens: int) -> Sample:
        import torch

        from ..api import prompt_ids
        from ..progress import quiet

        ids = torch.tensor([prompt_ids(tokenizer, prompt.text)], device=base.target.device)
        if assistant is not None:   # transformers adapts the draft length in place and keeps it across calls
            assistant.generation_config = copy.deepcopy(fresh_config)
        t = time.perf_counter()
        with torch.inference_mode(), quiet():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens,
                                 do_sample=False, temperature=None, top_p=None, top_k=None,
                                 pad_token_id=min(eos) if eos else None, **kwargs)
        total = time.perf_counter() - t
        new = out[0, ids.shape[1]:].tolist()
        new = new[:next((i for i, tok in enumerate(new) if tok in eos), len(new))]
        peak = peak_rss_bytes()
        return Sample(config.label, prompt.name, prompt.category, 0, len(new), total, peak_bytes=peak,
                      tokens=tuple(new))
    return go, f"{precision}; transformers generate", weights


_STOCK: dict[tuple, object] = {}


def stock_model(ref: str, dtype: str, device) -> object:
    """The model as transformers alone loads it (its own layers, no specx kernels), memoised per process."""
    from transformers import AutoModelForCausalLM

    from ..memory.variant import source_for
    from ..models.resolve import model_dir, torch_dtype
    from ..progress import library_calls

    key = (ref, dtype, str(device))
    if key not in _STOCK:
        folder = model_dir(source_for(ref), dtype)
        try:
            with library_calls():
                model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype(dtype), trust_remote_code=False)
            _STOCK[key] = model.to(device).eval()
        except (RuntimeError, MemoryError) as e:   # torch's out-of-memory errors are RuntimeErrors
            if isinstance(e, RuntimeError) and "memory" not in str(e).lower():
                raise
            raise InsufficientResources(f"transformers' own copy of {ref} for --peer hf-stock: {e}".splitlines()[0],
                                        "it is a second copy of the weights: use --peer hf, which shares "
                                        "specx's, or free memory") from None
    return _STOCK[key]


def stock_precision(dtype: str, *models) -> tuple[str, int]:
    """The precision sentence of a stock row, and the bytes of its weights."""
    from ..models.resolve import dtype_name

    weights = sum(_weight_bytes(m) for m in models)
    return f"{dtype_name(dtype)} (transformers' own layers and load, no specx kernels)", weights
