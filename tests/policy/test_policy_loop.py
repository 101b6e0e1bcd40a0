"""The loop under a policy: it prices a drafter's prompt pass, asks it to sit out, and trims drafts itself."""
from __future__ import annotations

import pytest
from test_loop import PROMPTS, plain_greedy

from specx.drafters.hybrid import HybridDrafter
from specx.drafters.model import ModelDrafter
from specx.drafters.ngram import NgramDrafter
from specx.engine.draft import Draft, NoDrafter
from specx.engine.loop import Generation
from specx.engine.types import Round, Sampling
from specx.policy.base import Policy
from specx.policy.costmodel import CostModel
from specx.policy.policy import make


@pytest.mark.parametrize("policy, prompt_len, read_s, sits_out", [
    ("auto", 20, 1.0, True), ("auto", 8, 1.0, False), ("fixed", 20, 1.0, False), ("auto", 20, 1e-9, False)])
def test_under_auto_a_hybrid_sits_its_model_out_of_a_prompt_over_twice_its_window_too_dear_to_read(
        make_lm, monkeypatch, policy, prompt_len, read_s, sits_out):
    """Under `auto` a hybrid whose model would see less than half of a prompt (window 4, more than
    8 unread tokens), too dear to read whole, only copies for that answer, never runs its model, and
    says so in a notice; a shorter prompt, another policy, or reading that fits the budget keeps
    the model. The output is the target's own either way."""
    target = make_lm("qwen2", seed=1)
    draft_lm = make_lm("qwen2", seed=2, layers=1)
    hybrid = HybridDrafter(NgramDrafter(), ModelDrafter(draft_lm, target.vocab_size, target.vocab_size, 4))
    hybrid.model.read_s = read_s   # seconds per token read, against a budget of 1 s
    monkeypatch.setattr(CostModel, "read_budget", lambda self, tokens: 1.0)
    prompt = [0] + [20 + i % 7 for i in range(prompt_len - 1)]
    events = list(Generation(target, hybrid, prompt, k=4, max_tokens=16, sampling=Sampling(),
                             policy=make(policy, 4)))
    tokens = [t for e in events if isinstance(e, Round) for t in e.token_ids]
    notices = events[-1].stats.notices
    assert tokens == plain_greedy(target.model, prompt, 16, eos=1)
    assert hybrid.copies_only is sits_out and (draft_lm.forward_s == 0) is sits_out
    assert any("copies only for this answer" in n for n in notices) is sits_out


def test_the_drafters_prompt_budget_is_priced_at_the_costs_measured_before_the_answer(make_lm):
    """The budget a drafter's prompt pass gets comes from the costs carried into the answer, not
    from its first plain step (which often runs slow): here that step is ~1000× faster than the
    carried one, and would have priced drafting at nothing."""
    class Recorder(NoDrafter):
        budgets: list = []

        def sit_out(self, seq, reuse=0, budget=None):
            self.budgets.append(budget)
            return ""

    def carried():
        return CostModel(verify_s={1: 0.19, 2: 0.22}, draft_step_s=0.031)

    policy = make("auto", 4, cost=carried())
    list(Generation(make_lm("llama", seed=1), Recorder(), PROMPTS[0], k=4, max_tokens=8,
                    sampling=Sampling(), policy=policy))
    assert Recorder.budgets == [pytest.approx(carried().read_budget(7))] and Recorder.budgets[0] > 0
    assert policy.cost.verify_s[1] < 0.19 and not policy.cost.read_budget(7)



class CopiesCut(Policy):
    """Cuts every copy from the context to nothing and a model's draft to its first token; records the drafts."""

    def __init__(self, k: int):
        super().__init__(k)
        self.seen: list[Draft] = []

    def trim(self, draft):
        self.seen.append(draft)
        keep = 0 if draft.lookup else 1
        return Draft(draft.tokens[:keep], None if draft.probs is None else draft.probs[:keep], draft.source,
                     draft.confidences[:keep], draft.made)


def test_the_loop_applies_the_policys_trim_to_what_every_drafter_proposes(make_lm):
    """Drafters propose whole drafts and are asked with plain numbers (no callable in the Ask); the
    loop sends the target what the policy's trim keeps, and the output is the target's own."""
    import dataclasses

    target = make_lm("llama", seed=1)
    drafter = ModelDrafter(make_lm("llama", seed=1), target.vocab_size, target.vocab_size)
    asks = []
    propose = drafter.propose
    drafter.propose = lambda seq, ask: asks.append(ask) or propose(seq, ask)
    policy = CopiesCut(4)
    events = list(Generation(target, drafter, PROMPTS[0], k=4, max_tokens=20, sampling=Sampling(), policy=policy))
    rounds = [e for e in events if isinstance(e, Round) and e.token_ids]
    assert [t for r in rounds for t in r.token_ids] == plain_greedy(target.model, PROMPTS[0], 20, eos=1)
    assert max(len(d.tokens) for d in policy.seen) > 1 and all(r.drafted <= 1 for r in rounds)
    assert asks and not any(callable(getattr(a, f.name)) for a in asks for f in dataclasses.fields(a))


class Proposes77(NoDrafter):
    name = "m77"

    def __init__(self):
        self.asked = 0

    def propose(self, seq, ask):
        self.asked += 1
        return Draft([77], None)


def test_a_copy_cut_to_nothing_hands_a_hybrids_round_to_its_model_and_leaves_an_ngram_round_empty():
    """Where the policy leaves nothing of a copy, the hybrid's model drafts instead (its draft trimmed
    too); an n-gram drafter has no other draft, and that round is plain. The output never changes."""
    from replay_traces import EOS, VOCAB, Clock, FakeTarget, TargetCosts
    from conftest import word_tokenizer

    block = [20 + i for i in range(12)]
    prompt, answer = [0] + block, block * 2          # the answer copies the prompt: long matches
    target = FakeTarget(prompt + answer + [EOS], Clock(), TargetCosts(), word_tokenizer(VOCAB, EOS))
    model = Proposes77()
    policy = CopiesCut(4)
    events = list(Generation(target, HybridDrafter(NgramDrafter(), model), prompt, k=4, max_tokens=20,
                             sampling=Sampling(), policy=policy))
    copies = [d for d in policy.seen if d.lookup]
    assert copies and all(d.tokens for d in copies)
    assert model.asked == len(policy.seen) - len(copies) >= len(copies)   # every cut copy: the model's turn
    assert [t for e in events if isinstance(e, Round) for t in e.token_ids] == answer[:20]
    assert NgramDrafter().instead(prompt, None) is None
    events = list(Generation(target, NgramDrafter(), prompt, k=4, max_tokens=20, sampling=Sampling(),
                             policy=CopiesCut(4)))
    assert all(e.drafted == 0 for e in events if isinstance(e, Round))
    assert [t for e in events if isinstance(e, Round) for t in e.token_ids] == answer[:20]
