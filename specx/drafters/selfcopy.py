"""`--drafter self-q2k`: the target drafts with a 2-bit (Q2_K) copy of its own layers.

The copy (copycache.py: quantized once from the target's own blocks, kept on disk per model file) is a
LeanLM that shares the target's embedding, norms and output layer and has its own KV cache and VocabTrim
head; it drafts through ModelDrafter like a separate small model, with no CPU window: it reads a prompt
as fast as it drafts (a quarter of the target's bytes), and unlike a small model it understands what the
target does, so a long prompt's head is worth reading (benchmarks/experiments/2026-11-27-lowbit-run)."""
from __future__ import annotations

import time
from dataclasses import replace

from ..errors import UsageError
from . import copycache

NAME = "self-q2k"
HINT = "use --drafter self (the target skips some of its layers) or --drafter ngram"


def check_target(target) -> None:
    """UsageError unless the target runs on specx's lean decoder with its block kernels, on matrices whose
    rows they decode and whose rows are whole Q2_K blocks."""
    from ..cpu.qweight import BLOCKS
    from ..decoder import linear
    from .self import lean_decoder

    if not lean_decoder(target):
        raise UsageError(f"--drafter {NAME} needs specx's lean CPU decoder, and {target.name} does not run on it",
                         HINT)
    if linear._quant() is None:
        raise UsageError(f"--drafter {NAME} needs specx's GGUF kernels, which are not available here", HINT)
    per = BLOCKS["Q2_K"][1]
    odd = next((m for m in copycache.matrices(target.model.weights) if m.cols % per or m.name not in BLOCKS), None)
    if odd is not None:
        raise UsageError(f"--drafter {NAME}: {target.name} has a {odd.name} layer matrix of {odd.cols} columns, "
                         f"not whole Q2_K blocks of {per}", HINT)


def for_target(target, model_path, usable: int, draft_vocab: int | None, notify=None):
    """(the copy's ModelDrafter, the clause that says what it is and costs)."""
    from ..decoder import vocabtrim
    from ..decoder.lm import LeanLM
    from ..decoder.model import Decoder
    from ..memory.probe import fmt_bytes
    from .model import ModelDrafter

    check_target(target)
    w = target.model.weights
    t = time.perf_counter()
    copies, built = copycache.load_or_build(model_path, w, notify)
    seconds = time.perf_counter() - t
    layers, it = [], iter(copies)
    for layer in w.layers:
        take = lambda group: [next(it) for _ in group]   # noqa: E731  (file order: qkv, o, gate_up, down)
        layers.append(replace(layer, qkv=take(layer.qkv), o=take(layer.o), gate_up=take(layer.gate_up),
                              down=take(layer.down)))
    config, tok = target.model.config, target.tokenizer
    keep = vocabtrim.choose_keep(draft_vocab, usable)
    head = vocabtrim.DraftHead(w.output, vocabtrim.keep_ids(tok, usable, keep), usable) if keep else None
    lm = LeanLM(Decoder(config, replace(w, layers=layers), target.model.context, target.model.mode), tok, NAME,
                eos=target.eos, kernels=f"kernels: a Q2_K copy of {target.name}'s layers", vocab=config.vocab_size,
                head=head)
    size = sum(m.nbytes for m in copies)
    where = copycache.cache_file(model_path)
    how = f"built in {seconds:.0f} s and cached in {where.parent}" if built else f"cached in {where.parent}"
    said = f"a 2-bit copy of {target.name}'s own layers, {fmt_bytes(size)} plus its own KV cache, {how}"
    return ModelDrafter(lm, target.vocab_size, usable, window=0), said
