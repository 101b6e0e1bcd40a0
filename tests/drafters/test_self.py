"""Self-speculation (drafters/self.py): the target drafts for itself on its own cache and leaves it as it found
it, so its output is the target's whatever the shape searched (greedy: token for token; sampled: its law)."""
from __future__ import annotations

import math

import pytest
import torch

from conftest import fixture_model, word_tokenizer
from specx.decoder.lm import load
from specx.drafters import self as selfdraft
from specx.drafters.skipsearch import VERIFY_SLOPE, Search, Shape, expected_speedup, first_guess
from specx.engine.draft import Ask, NoDrafter
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling

VOCAB = 96


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A LeanLM on a random 6-layer Llama saved as a safetensors folder."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, eos_token_id=1,
                         bos_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)   # sharp enough that drafts are often accepted, soft enough to sample
    folder = tmp_path_factory.mktemp("tiny-self")
    model.save_pretrained(folder, safe_serialization=True)
    word_tokenizer(VOCAB).save_pretrained(folder)
    return load(folder)


def prompt(n: int = 24, seed: int = 3) -> list[int]:
    return torch.randint(2, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def cache_slots(lm, end: int) -> list[torch.Tensor]:
    """Copies of every layer's keys and values in slots [0, end), and nothing else."""
    keys = lm.cache.k.permute(0, 1, 2, 4, 3).reshape(*lm.cache.k.shape[:2], -1, lm.cache.k.shape[3])
    return [keys[:, :, :end].clone(), lm.cache.v[:, :, :end].clone()]


def drafter(lm, shape: Shape | None = None) -> selfdraft.SelfDrafter:
    layers = lm.model.config.num_hidden_layers
    return selfdraft.SelfDrafter(lm, VOCAB, Search(layers, ("f32", "q8"), shape or Shape((2, 3))))


def primed(lm, seq: list[int]):
    lm.reset()
    lm.forward(seq[:-1], last_only=True)
    return cache_slots(lm, len(seq) - 1)


@pytest.mark.parametrize("greedy", [True, False])
def test_a_self_draft_leaves_the_targets_cache_as_it_found_it(tiny, greedy):
    """After propose, the cache holds seq[:-1] again, its slots bit for bit those before the draft."""
    seq = prompt()
    before = primed(tiny, seq)
    sampling = Sampling() if greedy else Sampling(temperature=1.0, seed=0)
    draft = drafter(tiny).propose(seq, Ask(5, sampling, torch.Generator().manual_seed(0)))
    assert len(draft.tokens) == 5 and (draft.probs is None) == greedy
    assert tiny.cached == len(seq) - 1
    assert all(torch.equal(a, b) for a, b in zip(before, cache_slots(tiny, len(seq) - 1)))


def test_teacher_forced_scoring_restores_the_slots_it_rewrote(tiny):
    """Scoring a shape over the last context tokens rewrites their slots in the active layers; afterwards
    every slot and the length are as before, bit for bit."""
    seq = prompt(40)
    before = primed(tiny, seq)
    alpha, seconds = drafter(tiny).teacher_forced(seq, Shape((1, 2, 4)), rows=16)
    assert 0.0 <= alpha <= 1.0 and seconds > 0
    assert tiny.cached == len(seq) - 1
    assert all(torch.equal(a, b) for a, b in zip(before, cache_slots(tiny, len(seq) - 1)))


def test_the_full_shape_scored_teacher_forced_agrees_with_the_targets_own_greedy_text(tiny):
    """The score is greedy acceptance: on the target's own greedy continuation, the full model scores 1."""
    seq = prompt(12)
    tiny.reset()
    for _ in range(20):
        seq.append(int(tiny.forward(seq[tiny.cached:])[-1].argmax()))
    tiny.crop(len(seq) - 1)
    assert drafter(tiny).teacher_forced(seq, Shape(), rows=16)[0] == 1.0


class Restless(Search):
    """A search that keeps every candidate: the shape changes after each scoring."""

    def record(self, shape, alpha, cost, slope=None):
        self.tried.add(shape)
        self.scored += 1
        changed, self.shape, self.score, self._queue = shape != self.shape, shape, 1.0, []
        return changed


def generate(lm, drafter, seq: list[int], k: int, max_tokens: int, sampling: Sampling = Sampling()) -> list[int]:
    events = Generation(lm, drafter, seq, k=k, max_tokens=max_tokens, sampling=sampling)
    return [t for e in events if isinstance(e, Round) for t in e.token_ids]


def restless(lm, monkeypatch) -> selfdraft.SelfDrafter:
    """A self drafter that scores a candidate every round (its slots restored in the loop) and switches to it."""
    monkeypatch.setattr(selfdraft, "SEARCH_SHARE", math.inf)
    layers = lm.model.config.num_hidden_layers
    search = Restless(layers, selfdraft.lean_modes(lm), seed=1)
    return selfdraft.SelfDrafter(lm, min(len(lm.tokenizer), lm.vocab_size), search)


def test_greedy_self_speculation_equals_plain_decoding_while_the_shape_changes_tiny(tiny, monkeypatch):
    """Tiny model: the tokens equal plain decoding's while the shape changes every round."""
    seq = prompt()
    plain = generate(tiny.fresh(), NoDrafter(), seq, 0, 40)
    d = restless(tiny, monkeypatch)
    assert generate(tiny, d, seq, 4, 40) == plain and d.search.scored > 3


def test_self_drafts_chains_when_trees_are_asked_and_stays_lossless(tiny, monkeypatch):
    """Asked for trees (--tree 8), a self drafter drafts chains, and the tokens still equal plain decoding's."""
    seq = prompt()
    plain = generate(tiny.fresh(), NoDrafter(), seq, 0, 40)
    d = restless(tiny, monkeypatch)
    drafts = []
    propose = d.propose
    monkeypatch.setattr(d, "propose", lambda s, ask: drafts.append(propose(s, ask)) or drafts[-1])
    events = Generation(tiny, d, seq, k=4, max_tokens=40, sampling=Sampling(), tree=8)
    assert [t for e in events if isinstance(e, Round) for t in e.token_ids] == plain
    assert any(x.tokens for x in drafts) and all(x.parents is None for x in drafts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m", "qwen2.5-coder-1.5b"])
def test_greedy_self_speculation_equals_plain_decoding_on_real_models(name, monkeypatch):
    """Real fixtures: self-speculation's greedy tokens equal plain decoding's while its shape (skip set and
    activation mode) changes mid-answer and candidates are scored on the shared cache between rounds."""
    from specx.engine.prompt import prompt_ids

    lm = load(fixture_model(name))
    seq = prompt_ids(lm.tokenizer, "Write a Python function that reverses a string.", None, False)
    plain = generate(lm.fresh(), NoDrafter(), seq, 0, 20)
    d = restless(lm, monkeypatch)
    assert generate(lm, d, seq, 3, 20) == plain
    assert len({s.mode for s in d.search.tried}) == 2 or len(d.search.tried) > 2   # it did change shape


def test_sampled_self_speculation_follows_the_targets_law(tiny):
    """Temperature 1, top-k 2: the law of the first three tokens (the 2nd and 3rd drafted by a 5-of-6-layer
    self-draft, whose top-2 laws differ from the target's by 0.06–0.5 in total variation: drafts are both
    accepted and rejected) equals the target's exact law (chi-square, fixed seeds, 600 runs)."""
    seq = prompt(8)
    law = exact_law(tiny, seq, depth=3)
    counts = torch.zeros(len(law), dtype=torch.float64)
    index = {path: i for i, path in enumerate(law)}
    d = drafter(tiny, Shape((4,)))
    d.search.done = True   # a fixed shape: the law must hold for any shape
    for run in range(600):
        out = generate(tiny, d, seq, 2, 3, Sampling(1.0, 2, None, run))
        assert tuple(out) in index, f"{out}: a path the target's top-2 law never gives"
        counts[index[tuple(out)]] += 1
    expected = torch.tensor(list(law.values()), dtype=torch.float64) * counts.sum()
    stat = float(((counts - expected) ** 2 / expected).sum())
    df = len(law) - 1
    p = float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), torch.tensor(stat / 2, dtype=torch.float64)))
    assert p > 1e-3, f"self-speculation deviates from the target law: p = {p:.3g}"


def exact_law(lm, seq: list[int], depth: int) -> dict[tuple[int, ...], float]:
    """P(the next `depth` tokens) under the target at temperature 1, top-k 2, by enumeration."""
    from specx.engine.sampling import warp

    law = {(): 1.0}
    for _ in range(depth):
        nxt = {}
        for path, p in law.items():
            lm.reset()
            probs = warp(lm.forward(seq + list(path), last_only=True), 1.0, 2)[0]
            for t in probs.nonzero().flatten().tolist():
                nxt[path + (t,)] = p * float(probs[t])
        law = nxt
    return law


# ---- the search and its store --------------------------------------------------------------------------

def test_the_search_keeps_a_better_neighbour_and_ends_at_a_local_optimum():
    """Scores are kept where better; once every neighbour scored no better, the search is done."""
    search = Search(6, ("f32", "q8"))
    assert search.next() == search.shape == first_guess(6) == Shape((1, 3))
    search.record(search.shape, 0.5, 0.6)
    while (shape := search.next()) is not None:
        good = shape == Shape((1,), "f32")
        search.record(shape, 0.8 if good else 0.1, 0.6)
    assert search.done and search.shape == Shape((1,), "f32")
    assert "5 of its 6 layers (leaving out layer 1), float32 activations" in search.explain()


def test_expected_speedup_rewards_acceptance_and_punishes_cost():
    """Acceptance gains and cost loses; a useless drafter loses (its best is one token a round)."""
    assert expected_speedup(0.0, 0.5) == (1 / (1.5 + VERIFY_SLOPE), 1)
    assert expected_speedup(0.9, 0.3)[0] > expected_speedup(0.9, 0.6)[0] > 1.0
    assert expected_speedup(0.9, 0.3)[0] > expected_speedup(0.5, 0.3)[0]


def test_a_dearer_verification_lowers_the_speedup_and_never_lengthens_the_chain():
    """Each verified row's cost (the slope) is paid once per drafted token: more of it, less gained, k no longer."""
    for alpha, cost in ((0.9, 0.3), (0.7, 0.5), (0.5, 0.1)):
        cheap, dear = expected_speedup(alpha, cost, slope=0.05), expected_speedup(alpha, cost, slope=0.3)
        assert cheap[0] > dear[0] and cheap[1] >= dear[1]


def test_a_measured_slope_reprices_the_current_shape_before_the_comparison():
    """A slope measured with a candidate replaces the held one for both sides: the current shape's score is
    recomputed with it, so a candidate is never kept only because it was priced at a cheaper verify."""
    search = Search(6, ("f32",))
    search.record(search.shape, 0.6, 0.5, slope=0.0)
    held = search.score
    search.record(Shape((2,)), 0.6, 0.5, slope=0.3)   # the same acceptance and cost: not better
    assert search.shape == first_guess(6) and search.slope == 0.3
    assert search.score == expected_speedup(0.6, 0.5, slope=0.3)[0] < held
    assert "each verified row costing 0.30 of a step" in search.explain()


def test_the_shape_store_round_trips_and_refuses_shapes_that_do_not_fit():
    """A saved shape comes back for its key only; a stored shape that does not fit the model is refused."""
    from specx.policy import selfskip

    key = {"target": "a", "device": "cpu"}
    assert selfskip.load(key) is None
    assert selfskip.save(key, Shape((3, 5), "q8").as_dict(), done=True, alpha=0.5, cost=0.6, scored=9)
    entry = selfskip.load(key)
    assert Shape.from_dict(entry["shape"], 8, ("f32", "q8")) == Shape((3, 5), "q8") and entry["done"] is True
    assert selfskip.load({**key, "device": "gpu"}) is None
    with pytest.raises(ValueError):
        Shape.from_dict(entry["shape"], 5, ("f32", "q8"))   # layer 5 is the last of 6: never left out
    with pytest.raises(ValueError):
        Shape.from_dict(entry["shape"], 8, ("f32",))


def test_a_drafter_starts_from_the_shape_saved_for_its_key(tiny):
    """for_target takes the stored shape (and says so) where the key has one, else the first guess."""
    key = {"target": "tiny"}
    fresh, said = selfdraft.for_target(tiny, VOCAB, key)
    assert fresh.shape == first_guess(6) and said.startswith("searches which of its layers")
    from specx.policy import selfskip

    selfskip.save(key, Shape((2,)).as_dict(), done=True, alpha=0.9, cost=0.8, scored=4)
    loaded, said = selfdraft.for_target(tiny, VOCAB, key)
    assert loaded.shape == Shape((2,)) and loaded.search.done and "found by an earlier run" in said


# ---- choosing it ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_auto_picks_self_with_copies_for_smollm2_and_says_so():
    """smollm2 names no model drafter: `auto` lets the lean-decoded target draft for itself and copy."""
    from specx import load as prepare
    from specx.drafters.hybrid import HybridDrafter

    pair = prepare(str(fixture_model("smollm2-135m")), "auto")
    assert isinstance(pair.drafter, HybridDrafter) and isinstance(pair.drafter.model, selfdraft.SelfDrafter)
    assert pair.explanation.startswith("drafter: self+ngram (self-speculation")
    assert "so the target drafts for itself" in pair.explanation


def test_self_is_refused_on_a_transformers_fallback_model(tmp_path):
    """A model the lean decoder cannot read (GPT-2 here) runs on transformers: `--drafter self` is refused
    with a hint."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from specx import load as prepare
    from specx.errors import UsageError

    GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=64)).save_pretrained(
        tmp_path, safe_serialization=True)
    word_tokenizer(VOCAB).save_pretrained(tmp_path)
    with pytest.raises(UsageError) as e:
        prepare(str(tmp_path), "self")
    assert "transformers" in e.value.message and "--drafter ngram" in e.value.hint


def test_the_tune_search_runs_to_a_local_optimum_and_saves_it(tiny):
    """search_fully (`specx tune --drafter self`) ends with the search done, its shape saved for the key."""
    from specx.policy import selfskip

    key = {"target": "tiny-tune"}
    d, _ = selfdraft.for_target(tiny, VOCAB, key)
    seq = prompt(40)
    sentence = selfdraft.search_fully(d, seq, rows=16)
    assert d.search.done and sentence.startswith("self-draft: ") and "searched" in sentence
    entry = selfskip.load(key)
    assert Shape.from_dict(entry["shape"], 6, selfdraft.lean_modes(tiny)) == d.shape
    # the slope was measured on this model (timed forwards of 1 and 16 rows), saved, and is read back
    assert d.search.slope != VERIFY_SLOPE and entry["slope"] == d.search.slope >= 0.0
    again, _ = selfdraft.for_target(tiny, VOCAB, key)
    assert again.search.slope == d.search.slope
