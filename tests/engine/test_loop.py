"""The engine on tiny random models: lossless greedy, cache bookkeeping, stop rules."""
from __future__ import annotations

import pytest
import torch

from specx.engine.draft import Ask, NoDrafter
from specx.drafters.model import ModelDrafter
from specx.drafters.hybrid import HybridDrafter
from specx.engine.loop import Generation
from specx.models.lm import _cache_argument
from specx.drafters.ngram import NgramDrafter
from specx.engine.types import Done, Round, Sampling

PROMPTS = [[0, 5, 9, 12, 5, 9], [0, 40, 41, 42, 43], [0, 7], [0, 3, 3, 3, 3, 3, 3], [0, 90, 2, 60, 2, 90]]


def plain_greedy(model, prompt, n, eos=None):
    """Reference: recompute the whole prefix every step (no cache), argmax."""
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            nxt = int(model(torch.tensor([seq])).logits[0, -1].argmax())
            if nxt == eos:
                break
            seq.append(nxt)
    return seq[len(prompt):]


def run(target, drafter, prompt, k, n, sampling=Sampling(), stops=()):
    events = list(Generation(target, drafter, prompt, k=k, max_tokens=n, sampling=sampling, stop_strings=stops))
    tokens = [t for e in events if isinstance(e, Round) for t in e.token_ids]
    return tokens, events


def model_drafter(lm, target):
    return ModelDrafter(lm, target.vocab_size, target.vocab_size)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_greedy_speculative_equals_plain_greedy(make_lm, arch, k):
    """At temperature 0, the output is the target's own greedy decoding, whatever the drafter."""
    target = make_lm(arch, seed=1)
    for drafter in (model_drafter(make_lm(arch, seed=1), target), model_drafter(make_lm(arch, seed=7, layers=1), target),
                    NgramDrafter(), NoDrafter(),
                    HybridDrafter(NgramDrafter(), model_drafter(make_lm(arch, seed=7, layers=1), target))):
        for prompt in PROMPTS:
            tokens, _ = run(target, drafter, prompt, k, 24)
            assert tokens == plain_greedy(target.model, prompt, 24, eos=1), (drafter.name, prompt)


def test_self_drafting_accepts_everything(make_lm):
    """The target as its own drafter has acceptance exactly 100% at temperature 0."""
    target = make_lm("llama", seed=2)
    _, events = run(target, model_drafter(make_lm("llama", seed=2), target), PROMPTS[0], 4, 30)
    stats = events[-1].stats
    assert stats.drafted > 0 and stats.accepted == stats.drafted
    assert stats.mean_acceptance_length == pytest.approx(1 + stats.accepted / stats.rounds)


def test_cache_length_tracks_committed_length(make_lm):
    """After every round both caches hold exactly the committed tokens but the newest one."""
    target = make_lm("llama", seed=3)
    draft_lm = make_lm("llama", seed=4, layers=1)
    gen = Generation(target, model_drafter(draft_lm, target), PROMPTS[1], k=3, max_tokens=40, sampling=Sampling())
    committed = len(PROMPTS[1])
    for event in gen:
        if isinstance(event, Round) and event.token_ids:
            committed += len(event.token_ids)
            if event.drafted:
                assert target.cached == committed - 1
                assert draft_lm.cached <= committed - 1


def test_cropped_cache_gives_fresh_logits(make_lm):
    """After rewinding, the next step's logits equal a fresh full-prefix forward."""
    target = make_lm("qwen2", seed=5)
    gen = Generation(target, model_drafter(make_lm("qwen2", seed=6), target), PROMPTS[0], k=4,
                     max_tokens=20, sampling=Sampling())
    seq = list(PROMPTS[0])
    for event in gen:
        if isinstance(event, Round) and event.token_ids and not isinstance(event, Done):
            seq += event.token_ids
            if target.cached == len(seq) - 1:
                cached_logits = target.model(torch.tensor([seq[-1:]]), **{_cache_argument(target.model): target.cache}).logits[0, -1]
                target.crop(len(seq) - 1)
                fresh = target.model(torch.tensor([seq])).logits[0, -1]
                assert torch.allclose(cached_logits, fresh, atol=1e-9)


def test_seeded_sampling_is_reproducible(make_lm):
    """The same seed gives the same tokens; another seed gives other tokens."""
    target = make_lm("llama", seed=8)
    drafter = lambda: model_drafter(make_lm("llama", seed=9, layers=1), target)  # noqa: E731
    runs = [run(target, drafter(), PROMPTS[2], 3, 30, Sampling(temperature=1.0, seed=s))[0] for s in (1, 1, 2)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_eos_inside_an_accepted_chunk_stops_there(make_lm):
    """EOS accepted mid-chunk ends the run before it; nothing after it is emitted."""
    target = make_lm("llama", seed=10)
    reference = plain_greedy(target.model, PROMPTS[1], 12)
    eos = next(t for i, t in enumerate(reference) if i >= 2 and t not in reference[:i])
    cut = reference.index(eos)
    target.model.generation_config.eos_token_id = eos
    tokens, events = run(target, model_drafter(make_lm("llama", seed=10), target), PROMPTS[1], 5, 20)
    assert tokens == reference[:cut]
    assert events[-1].reason == "eos"


def test_max_tokens_inside_an_accepted_chunk(make_lm):
    """A budget smaller than the chunk gives exactly max_tokens tokens."""
    target = make_lm("llama", seed=11)
    for n in (1, 2, 3, 7):
        tokens, events = run(target, model_drafter(make_lm("llama", seed=11), target), PROMPTS[0], 5, n)
        assert len(tokens) == n and events[-1].reason == "length"


def test_stop_string_inside_an_accepted_chunk(make_lm):
    """A stop string completed mid-chunk ends the text right before it."""
    target = make_lm("llama", seed=12)
    reference = plain_greedy(target.model, PROMPTS[3], 12)
    words = [f"w{t}" for t in reference]
    stop = f"{words[4]} {words[5]}"
    full = " ".join(words)
    _, events = run(target, model_drafter(make_lm("llama", seed=12), target), PROMPTS[3], 5, 12, stops=(stop,))
    text = "".join(e.text for e in events if isinstance(e, Round))
    assert text == full[:full.index(stop)]
    assert events[-1].reason == "stop"


def test_k_zero_is_plain_decoding(make_lm):
    """k = 0 never drafts and still equals plain greedy."""
    target = make_lm("llama", seed=13)
    tokens, events = run(target, NgramDrafter(), PROMPTS[0], 0, 16)
    assert tokens == plain_greedy(target.model, PROMPTS[0], 16, eos=1)
    assert events[-1].stats.drafted == 0


def test_context_limit_clamps_k(make_lm):
    """Near the end of the context, k shrinks and the run stops at the context, not past it."""
    target = make_lm("llama", seed=14, max_pos=16)
    tokens, events = run(target, model_drafter(make_lm("llama", seed=14, max_pos=16), target), PROMPTS[0], 5, 100)
    assert len(PROMPTS[0]) + len(tokens) == 16
    assert events[-1].reason in ("context", "eos")


class Asked(NoDrafter):
    """A model drafter that records being asked and proposes [77]."""

    name = "asked"

    def __init__(self):
        self.asked = 0

    def propose(self, *args, **kw):
        from specx.engine.draft import Draft

        self.asked += 1
        return Draft([77], None)


def test_the_hybrid_copies_where_the_context_holds_the_continuation_and_asks_the_model_elsewhere(make_lm):
    """A three-token match is copied for free (marked `lookup`); a two-token one (common words in
    prose) goes to the model, as does no match at all."""
    model = Asked()
    hybrid = HybridDrafter(NgramDrafter(), model)
    draft = hybrid.propose([0, 5, 9, 12, 7, 0, 5, 9], Ask(3))
    assert draft.tokens == [12, 7, 0] and draft.lookup and model.asked == 0
    draft = HybridDrafter(NgramDrafter(), model).propose([3, 5, 9, 12, 7, 0, 5, 9], Ask(3))
    assert draft.tokens == [77] and not draft.lookup and model.asked == 1
    target = make_lm("llama", seed=5)
    hybrid = HybridDrafter(NgramDrafter(), model_drafter(make_lm("llama", seed=5, layers=1), target))
    hybrid.prefill([0, 40, 41, 42])
    draft = hybrid.propose([0, 40, 41, 42], Ask(3))
    assert len(draft.tokens) == 3 and not draft.lookup and hybrid.name.endswith("+ngram")


def test_a_model_drafter_stops_at_a_token_that_ends_the_answer(make_lm):
    """Nothing after an end-of-answer token is ever kept: a draft ends at the first (it included)."""
    seq = [0, 5, 9, 12, 7, 30]

    def drafted(ask):
        drafter = ModelDrafter(make_lm("qwen2", seed=3, layers=1), 128, 128)
        drafter.prefill(seq)
        return drafter.propose(seq, ask).tokens

    expected = drafted(Ask(4))
    assert len(expected) == 4
    assert drafted(Ask(4, eos=frozenset({expected[1]}))) == expected[:2]


def test_the_first_round_is_plain_and_the_drafter_reads_the_prompt_after_it(make_lm):
    """The first token costs what it costs without a drafter: no draft, and the drafter's prompt
    pass comes after it (the prompt plus that token)."""
    target = make_lm("llama", seed=1)

    class Recorder(NoDrafter):
        def __init__(self):
            self.prefilled, self.asked = [], 0

        def prefill(self, seq, reuse=0):
            self.prefilled.append(len(seq))

        def propose(self, seq, ask):
            self.asked += 1
            return NoDrafter.propose(self, seq, ask)

    recorder = Recorder()
    _, events = run(target, recorder, PROMPTS[0], 4, 6)
    rounds = [e for e in events if isinstance(e, Round) and e.token_ids]
    assert rounds[0].drafted == 0 and len(rounds[0].token_ids) == 1
    assert recorder.prefilled == [len(PROMPTS[0]) + 1] and recorder.asked == len(rounds) - 1


@pytest.mark.parametrize("window", [3, 5])
def test_a_windowed_drafter_reads_only_the_last_tokens_and_output_stays_exact(make_lm, window):
    """A drafter with a window caches at most `window` unread tokens at once (a long prompt, a
    long plain stretch), from the right offset; the output is still the target's own."""
    target = make_lm("qwen2", seed=1)
    draft_lm = make_lm("qwen2", seed=1)
    drafter = ModelDrafter(draft_lm, target.vocab_size, target.vocab_size, window)
    prompt = [0] + list(range(20, 40))
    drafter.prefill(prompt)
    assert drafter.offset == len(prompt) - 1 - window and draft_lm.cached == window
    assert drafter.held == prompt[-1 - window:-1]
    for p in PROMPTS + [prompt]:
        tokens, events = run(target, drafter, p, 4, 24)
        assert tokens == plain_greedy(target.model, p, 24, eos=1)
        assert draft_lm.cached == len(drafter.held) <= window + 24


def test_a_long_unread_stretch_is_spliced_and_the_drafter_drafts_as_if_it_was_never_written(make_lm):
    """A round that finds more than SPLICE tokens the drafter has not read (a long accepted copy) reads only their
    last SPLICE: it then drafts exactly as a drafter that read the text with the gap closed up; the next answer
    keeps its cache up to the splice and reads the rest, as a fresh drafter reads the whole sequence."""
    from specx.engine.draft import Ask

    drafter = ModelDrafter(make_lm("qwen2", seed=3, layers=1), 128, 128)
    prompt = [0] + list(range(20, 30))
    drafter.prefill(prompt)
    seq = prompt + list(range(40, 60))                      # 20 tokens it has not read, the last one included
    draft = drafter.propose(seq, Ask(3))
    closed = prompt[:-1] + seq[-drafter.SPLICE:]
    assert drafter.held[:len(closed)] == closed and drafter.offset == len(seq) - len(closed)
    fresh = ModelDrafter(make_lm("qwen2", seed=3, layers=1), 128, 128)
    fresh.prefill(closed)
    assert fresh.propose(closed, Ask(3)).tokens == draft.tokens
    drafter.commit(len(draft.tokens), 0)
    turn = seq + [7, 8]
    drafter.prefill(turn, reuse=len(seq))
    assert drafter.offset == 0 and drafter.held == turn[:-1] and drafter.joined is None
    expected = make_lm("qwen2", seed=3, layers=1).forward(turn, last_only=True)
    assert torch.allclose(drafter.lm.forward(turn[-1:], last_only=True), expected, atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_splicing_after_every_accepted_copy_keeps_the_output_exact(make_lm, arch):
    """A hybrid whose model drafter splices whenever it lacks more than one token (SPLICE = 1) still gives the
    target's own greedy output on every prompt."""
    target = make_lm(arch, seed=1)
    model = model_drafter(make_lm(arch, seed=1, layers=1), target)
    model.SPLICE = 1
    spliced = []
    for prompt in PROMPTS + [[0] + [4, 5, 6, 7] * 6]:
        tokens, _ = run(target, HybridDrafter(NgramDrafter(), model), prompt, 5, 32)
        assert tokens == plain_greedy(target.model, prompt, 32, eos=1), prompt
        spliced.append(model.joined is not None)
    assert any(spliced)


def test_a_drafter_keeps_only_what_its_cache_really_holds_of_a_reused_prefix(make_lm):
    """A chat turn's `reuse` counts the target's cache; the drafter keeps the part its own cache
    holds (it may have read another text since) and reads the rest."""
    target = make_lm("llama", seed=1)
    draft_lm = make_lm("llama", seed=2, layers=1)
    drafter = ModelDrafter(draft_lm, target.vocab_size, target.vocab_size)
    first, other = [0, 5, 9, 12, 5, 9, 30], [0, 5, 9, 40, 41, 42, 43, 44]
    drafter.prefill(first)
    drafter.prefill(other, reuse=6)      # the target held 6 tokens of `other`; the drafter 3
    assert drafter.held == other[:-1] and draft_lm.cached == len(other) - 1
    fresh = make_lm("llama", seed=2, layers=1)
    expected = fresh.forward(other, last_only=True)
    assert torch.allclose(draft_lm.forward(other[-1:], last_only=True), expected, atol=1e-5)


def test_the_drafters_prompt_pass_stays_out_of_the_decoding_forward_time(make_lm):
    """The drafter reads the prompt after the first round, but as prefill: its forward time is not
    counted in the decoding rounds' forward time (the overhead figure compares those two)."""
    class PromptReader(NoDrafter):
        forward_s = 0.0

        def prefill(self, seq, reuse=0):
            self.forward_s += 100.0     # as if its prompt pass spent 100 s in forwards

    _, events = run(make_lm("llama", seed=1), PromptReader(), PROMPTS[0], 4, 6)
    stats = events[-1].stats
    assert stats.forward_s < 100.0 and 0.0 <= stats.overhead_share <= 1.0


def test_a_drafter_measures_what_reading_costs_on_a_spare_cache_and_reads_whole_what_fits(make_lm):
    """With nothing measured, deciding whether a long prompt fits the budget times one read of
    READ_PROBE tokens on a spare cache (its own cache is untouched); a prompt that fits is then read
    whole, one that does not through the window, and a real read of a long prompt is timed again."""
    draft_lm = make_lm("qwen2", seed=2, layers=1)
    drafter = ModelDrafter(draft_lm, 128, 128, 4)
    drafter.prefill([0, 5, 6, 7])
    prompt = [0] + list(range(20, 60))
    assert not drafter.plan(prompt, budget=1e3) and drafter.read_s and draft_lm.cached == 3   # probed aside
    drafter.prefill(prompt)
    assert drafter.offset == 0 and drafter.held == prompt[:-1]                               # whole prompt
    measured = drafter.read_s
    assert drafter.plan(prompt, budget=0.0)                          # too dear: it would see 4 of 40
    drafter.prefill(prompt)
    assert drafter.held == prompt[-5:-1] and drafter.read_s == measured                       # window only
    assert drafter.plan(prompt + [1], reuse=len(prompt), budget=0.0) is False                 # 1 unread token


def test_a_forward_through_transformers_warns_nothing(make_lm):
    """The cache goes by the argument name the installed transformers takes: no deprecation warning
    reaches the user on any forward (prefill, decode, verify)."""
    import warnings

    lm = make_lm()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm.forward([0, 5, 7, 9], last_only=True)
        lm.forward([11])
        lm.forward([12, 13, 14])


class _Clocked:
    """A drafter LM whose forwards cost fake seconds: 10 ms, and 5 ms more for each further token."""

    def __init__(self, lm):
        self.inner, self.forward_s = lm, 0.0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def forward(self, ids, last_only=False):
        self.forward_s += 0.010 + 0.005 * (len(ids) - 1)
        return self.inner.forward(ids, last_only=last_only)


def test_the_drafters_catching_up_is_not_a_drafted_tokens_cost(make_lm):
    """A draft after tokens the drafter has not seen (plain rounds, copies) starts with a forward of them all:
    Draft.read_s is what that forward cost beyond a one-token step, which the policy keeps out of its drafting
    step; a round's usual two tokens (the target's, and the last draft when all were accepted) are a step's."""
    from specx.drafters.model import ModelDrafter
    from specx.engine.draft import Ask

    lm = _Clocked(make_lm("llama", seed=2, layers=1))
    drafter = ModelDrafter(lm, lm.vocab_size, lm.vocab_size)
    seq = [0, 5, 9, 12, 5, 9]
    drafter.prefill(seq)
    first = drafter.propose(seq, Ask(3))
    assert first.read_s == 0.0 and drafter.step_s == pytest.approx(0.010)
    drafter.commit(len(first.tokens), 0)
    seq += [7, 8, 30, 31, 32, 33, 34]      # seven tokens it has not seen: one forward of 7 rows, 40 ms
    again = drafter.propose(seq, Ask(3))
    assert again.read_s == pytest.approx(0.030)
    drafter.commit(len(again.tokens), len(again.tokens))
    seq += again.tokens + [3]               # all accepted, and the target's token: two tokens, a step's work
    assert drafter.propose(seq, Ask(3)).read_s == 0.0
