"""VocabTrim: a drafter that scores a subset of the vocabulary proposes only from it, maps ids back
correctly, and leaves the output exactly the target's."""
from __future__ import annotations

import copy

import torch

from specx.decoder import vocabtrim
from specx.engine.draft import Ask
from specx.drafters.model import ModelDrafter
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling


def _trimmed(lm, keep: int):
    ids = vocabtrim.keep_ids(lm.tokenizer, 96, keep)
    clone = copy.deepcopy(lm.model)
    vocabtrim.trim_output_layer(clone, ids)
    return type(lm)(clone, lm.tokenizer, lm.name + "-trim", vocab=96, keep_ids=ids)


def test_keep_ids_are_the_first_ids_plus_special_tokens(make_lm):
    lm = make_lm()
    ids = vocabtrim.keep_ids(lm.tokenizer, 96, 10)
    assert ids.tolist() == sorted(set(range(10)) | {lm.tokenizer.eos_token_id})
    assert vocabtrim.keep_ids(lm.tokenizer, 96, 1000).tolist() == list(range(96))


def test_choose_keep_trims_lean_drafters_by_default_and_others_when_asked():
    """Lean drafters (which add the context's ids) keep DEFAULT_KEEP rows, or a third of a vocabulary of
    MIN_VOCAB_TO_TRIM or more; transformers' drafters and small vocabularies keep all unless asked."""
    assert vocabtrim.choose_keep(None, 151_936) == 32_768 and vocabtrim.choose_keep(None, 49_152) == 16_384
    assert vocabtrim.choose_keep(None, 32_000) == 0 and vocabtrim.choose_keep(None, 151_936, lean=False) == 0
    assert vocabtrim.choose_keep(0, 151_936) == 0 and vocabtrim.choose_keep(200_000, 151_936) == 0
    assert vocabtrim.choose_keep(5000, 151_936, lean=False) == 5000


def test_trimmed_drafter_proposes_the_best_kept_token(make_lm):
    """Each drafted token is the argmax of the full drafter's logits restricted to the kept ids."""
    draft = make_lm("qwen2", seed=4, layers=1)
    trimmed = ModelDrafter(_trimmed(draft, 40), 96, 96)
    seq = [0, 5, 9, 12, 50, 60]
    trimmed.prefill(seq)
    proposal = trimmed.propose(seq, Ask(5)).tokens
    keep = trimmed.keep
    full = draft.fresh()
    context = list(seq)
    for token in proposal:
        logits = full.forward(context)[-1]
        assert token == int(keep[logits[keep].argmax()])
        full.reset()
        context.append(token)


def test_trimmed_draft_probabilities_are_zero_outside_the_kept_ids(make_lm):
    draft = make_lm("qwen2", seed=4, layers=1)
    trimmed = ModelDrafter(_trimmed(draft, 40), 96, 96)
    seq = [0, 5, 9]
    trimmed.prefill(seq)
    q = trimmed.propose(seq, Ask(3, Sampling(temperature=1.0, seed=1), torch.Generator().manual_seed(1))).probs
    outside = torch.ones(96, dtype=torch.bool)
    outside[trimmed.keep] = False
    assert q[:, outside].abs().max() == 0
    assert torch.allclose(q.sum(-1), torch.ones(len(q), dtype=q.dtype))


def test_speculative_output_with_a_trimmed_drafter_equals_plain(make_lm):
    target, draft = make_lm("qwen2", seed=3), make_lm("qwen2", seed=4, layers=1)
    outs = []
    for k, drafter in ((0, ModelDrafter(draft, 96, 96)), (4, ModelDrafter(_trimmed(draft, 30), 96, 96))):
        gen = Generation(target, drafter, [0, 5, 9, 12], k=k, max_tokens=40, sampling=Sampling())
        outs.append([t for e in gen if isinstance(e, Round) for t in e.token_ids])
    assert outs[0] == outs[1] and len(outs[0]) > 10
