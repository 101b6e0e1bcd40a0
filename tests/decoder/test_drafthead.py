"""VocabTrim on the lean decoder (vocabtrim.DraftHead): a drafter scores the first ids, the special tokens and
every id of its answer's context; its logit columns are exactly the full layer's at those ids, and the target's
output never changes (model drafter and self-draft, greedy and sampled)."""
from __future__ import annotations

import pytest
import torch

from conftest import word_tokenizer
from specx.decoder.lm import load
from specx.drafters import self as selfdraft
from specx.drafters.model import ModelDrafter
from specx.drafters.skipsearch import Search, Shape
from specx.engine.draft import Ask
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling

VOCAB = 96
KEEP = 24


def _folder(tmp_path_factory, seed: int, layers: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, eos_token_id=1,
                         bos_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    folder = tmp_path_factory.mktemp(f"head-{seed}")
    model.save_pretrained(folder, safe_serialization=True)
    word_tokenizer(VOCAB).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """(target folder, drafter folder): random Llamas of one vocabulary, 4 and 1 layers."""
    return _folder(tmp_path_factory, 0, 4), _folder(tmp_path_factory, 1, 1)


def seqs(n: int, count: int = 200):
    for seed in range(count):
        yield torch.randint(2, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def varied(target) -> list[int]:
    """A prompt whose greedy continuation holds at least 6 ids beyond the first KEEP (random tiny models often
    repeat one token; a low id would let a wrong column-to-id mapping pass)."""
    for seq in seqs(10):
        plain = generate(target.fresh(), None, seq, k=0, n=24)
        if len(set(plain) - set(range(KEEP))) >= 6:
            return seq
    pytest.fail("no prompt with a varied continuation")


def generate(target, drafter, seq, k, sampling=Sampling(), n=40):
    from specx.engine.draft import NoDrafter

    events = Generation(target, drafter or NoDrafter(), seq, k=k, max_tokens=n, sampling=sampling)
    return [t for e in events if isinstance(e, Round) for t in e.token_ids]


def test_the_head_scores_base_then_context_ids_as_the_full_layer_does(folders):
    """Columns: the first KEEP ids and the specials, then the context's other ids in the order first seen;
    each column's logit equals the full layer's at its id, bit for bit."""
    full, trimmed = load(folders[1]), load(folders[1], draft_vocab=KEEP)
    seq = [5, 60, 7, 80, 60, 91]
    trimmed.head.restart(seq)
    base = trimmed.head.base.tolist()
    assert set(range(KEEP)) <= set(base) and trimmed.keep_ids.tolist() == base + [60, 80, 91]
    assert torch.equal(trimmed.forward(seq), full.forward(seq)[:, trimmed.keep_ids])


def test_columns_only_grow_within_an_answer_and_restart_forgets_them(folders):
    lm = load(folders[1], draft_vocab=KEEP)
    lm.head.restart([50, 3])
    lm.head.follow([50, 3, 70, 50, 71])
    assert lm.keep_ids[-3:].tolist() == [50, 70, 71]
    lm.head.follow([50, 3, 70, 50, 71, 70, 2])   # nothing new: nothing added
    assert lm.keep_ids[-3:].tolist() == [50, 70, 71]
    lm.head.restart([88])
    assert lm.keep_ids[-1:].tolist() == [88] and 50 not in lm.keep_ids.tolist()


def test_a_trimmed_drafter_proposes_a_context_token_beyond_the_first_ids(folders):
    """Where the full drafter's next token lies beyond the first ids but in the context, the trimmed drafter
    proposes it too (the first ids alone could not: Qwen's code fence is such a token)."""
    full = load(folders[1])
    for seq in seqs(12):
        full.reset()
        best = int(full.forward(seq, last_only=True)[0].argmax())
        if best >= KEEP and best in seq[:-1]:
            break
    else:
        pytest.fail("no context whose next token lies beyond the first ids")
    drafter = ModelDrafter(load(folders[1], draft_vocab=KEEP), VOCAB, VOCAB)
    drafter.prefill(seq)
    assert drafter.propose(seq, Ask(1)).tokens == [best]
    assert best not in drafter.head.base.tolist()


@pytest.mark.parametrize("greedy", [True, False])
def test_speculation_with_a_trimmed_lean_drafter_is_lossless(folders, greedy):
    """Greedy: the same tokens as plain decoding. Sampled: the same seed gives the same text as with the
    untrimmed drafter's run only where drafts agree, so check the law's precondition instead: every draft
    probability outside the kept ids is zero and each row sums to one."""
    target = load(folders[0])
    seq = varied(target)
    if greedy:
        plain = generate(target, ModelDrafter(load(folders[1]), VOCAB, VOCAB), seq, k=0)
        trimmed = generate(target.fresh(), ModelDrafter(load(folders[1], draft_vocab=KEEP), VOCAB, VOCAB), seq, k=4)
        assert plain == trimmed and len(plain) > 10
        return
    drafter = ModelDrafter(load(folders[1], draft_vocab=KEEP), VOCAB, VOCAB)
    drafter.prefill(seq)
    q = drafter.propose(seq, Ask(4, Sampling(temperature=1.0, seed=1), torch.Generator().manual_seed(1))).probs
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[drafter.keep] = False
    assert q[:, outside].abs().max() == 0 and torch.allclose(q.sum(-1), torch.ones(len(q), dtype=q.dtype))


def test_a_self_draft_over_a_trimmed_head_is_lossless_and_scores_through_it(folders):
    """The target drafting for itself over KEEP ids and its context's: greedy output equals plain decoding, and
    the teacher-forced score of the full shape on the target's own greedy text is still 1 (ids mapped back)."""
    from specx.decoder import vocabtrim

    target = load(folders[0])
    base = vocabtrim.keep_ids(target.tokenizer, VOCAB, KEEP)
    layers = target.model.config.num_hidden_layers

    def drafter(lm, shape: Shape) -> selfdraft.SelfDrafter:
        head = vocabtrim.DraftHead(lm.model.weights.output, base, VOCAB)
        return selfdraft.SelfDrafter(lm, VOCAB, Search(layers, ("f32",), shape), head=head)

    seq = varied(target)
    plain = generate(target, drafter(target, Shape((1,))), seq, k=0)
    other = target.fresh()
    assert generate(other, drafter(other, Shape((1,))), seq, k=4) == plain and len(plain) > 10
    full = drafter(target, Shape())
    target.reset()
    text = seq + plain[:20]
    target.forward(text[:-1], last_only=True)
    full.prefill(text)
    assert full.teacher_forced(text, Shape(), rows=16)[0] == 1.0


def test_for_target_builds_the_head_and_says_so(folders):
    target = load(folders[0])
    drafter, said = selfdraft.for_target(target, VOCAB, None, draft_vocab=KEEP)
    assert drafter.head is not None and "VocabTrim" in said
    assert selfdraft.for_target(target, VOCAB, None)[0].head is None
