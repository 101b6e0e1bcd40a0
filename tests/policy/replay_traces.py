"""Scripted traces for the draft policies' replay test: the loop's decisions on fake models and a fake clock.

Each trace runs the real loop (engine/loop.py), the real drafters and a real policy against a target
whose answer is scripted, a drafter LM that guesses it from the last two tokens (right or wrong,
with a confidence, by a fixed hash), and a clock that only the fake forwards move: every timing the
policy sees is a fixed number, so its decisions (k per round, how much of each draft it sends, the
notices) are too. `python tests/policy/replay_traces.py` records them into
tests/data/policy_replay.json; tests/policy/test_policy_replay.py asserts the code still makes them.
"""
from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
RECORD = HERE.parent / "data" / "policy_replay.json"
VOCAB = 256
EOS = 1


class Clock:
    """Seconds that pass only when a fake model says its forward took them."""

    def __init__(self):
        self.t = 1000.0

    def perf_counter(self) -> float:
        return self.t

    def spend(self, seconds: float) -> float:
        self.t += seconds
        return seconds


def _frac(*xs: int) -> float:
    """A fixed pseudo-random number in [0, 1) from integers."""
    h = 0
    for x in xs:
        h = (h * 1000003 + x * 2654435761 + 97) % 2147483647
    return (h % 100003) / 100003


@dataclass
class TargetCosts:
    """Seconds of a target forward of n tokens: base + slope·ln n, times a slow wobble; after `shift_at`
    forwards a plain (1-token) forward takes `shifted` instead (a shared CPU speeding up)."""

    base: float = 0.10
    slope: float = 0.05
    wobble: float = 0.08
    shift_at: int | None = None
    shifted: float = 0.07
    calls: int = 0

    def __call__(self, n: int) -> float:
        self.calls += 1
        if self.shift_at is not None and self.calls > self.shift_at and n == 1:
            return self.shifted
        return (self.base + self.slope * math.log(n)) * (1 + self.wobble * math.sin(self.calls / 3))


class FakeTarget:
    """A target whose greedy answer is `seq` (prompt + answer + EOS), token by position."""

    def __init__(self, seq: list[int], clock: Clock, costs: TargetCosts, tokenizer):
        self.seq, self.clock, self.costs, self.tokenizer = seq, clock, costs, tokenizer
        self.cached, self.forward_s = 0, 0.0
        self.name, self.placement, self.max_context = "fake-target", "", 4096
        self.device, self.eos_ids, self.vocab_size = torch.device("cpu"), frozenset({EOS}), VOCAB

    def forward(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        start = self.cached
        self.cached += len(ids)
        self.forward_s += self.clock.spend(self.costs(len(ids)) if not last_only else 0.002 * len(ids))
        positions = range(start + 1, self.cached + 1)
        if last_only:
            positions = positions[-1:]
        logits = torch.zeros(len(positions), VOCAB)
        for row, p in enumerate(positions):
            logits[row, self.seq[p] if p < len(self.seq) else EOS] = 20.0
        return logits

    def crop(self, length: int) -> None:
        self.cached = min(self.cached, length)

    def reset(self) -> None:
        self.cached = 0


class FakeDrafterLM:
    """A drafter LM: after (a, b) it guesses what followed (a, b) first in the true sequence, wrong
    with chance `wrong`, with a confidence that is higher where it is right (a fixed hash decides)."""

    def __init__(self, seq: list[int], clock: Clock, wrong: float, step_s: float, read_s: float):
        self.table: dict[tuple[int, int], int] = {}
        for i in range(1, len(seq) - 1):
            self.table.setdefault((seq[i - 1], seq[i]), seq[i + 1])
        self.seq, self.clock, self.wrong, self.step_s, self.read_s = seq, clock, wrong, step_s, read_s
        self.held: list[int] = []
        self.forward_s = 0.0
        self.name, self.keep_ids, self.max_context = "fake-drafter", None, 4096

    def fresh(self) -> "FakeDrafterLM":
        return FakeDrafterLM(self.seq, self.clock, self.wrong, self.step_s, self.read_s)

    @property
    def cached(self) -> int:
        return len(self.held)

    def reset(self) -> None:
        self.held = []

    def crop(self, length: int) -> None:
        del self.held[length:]

    def forward(self, ids: list[int], last_only: bool = False) -> torch.Tensor:
        self.held.extend(ids)
        self.forward_s += self.clock.spend(self.step_s + self.read_s * (len(ids) - 1))
        a, b = (self.held[-2] if len(self.held) > 1 else -1), self.held[-1]
        u, v = _frac(a, b), _frac(b, a, 7)
        right = self.table.get((a, b), 2 + (a * 7 + b * 13) % (VOCAB - 2))
        guess = right if u >= self.wrong else 2 + (right + 1 + int(v * 5)) % (VOCAB - 2)
        confidence = min(0.995, 0.05 + 0.5 * v + (0.45 if guess == right else 0.1))
        logits = torch.zeros(1, VOCAB)
        logits[0, guess] = math.log(confidence * (VOCAB - 1) / (1 - confidence))
        return logits


def prose(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(2, VOCAB) for _ in range(n)]


def texts(kind: str, seed: int) -> tuple[list[int], list[int]]:
    """(prompt, answer) of a kind: prose; an edit (a block copied back with one name replaced);
    a loop (a short phrase repeated); a long prompt with a short question; phrases (one stem of four
    tokens, each time followed by something else: copies that look strong and fail)."""
    rng = random.Random(seed)
    if kind == "prose":
        return [0] + prose(rng, 12), prose(rng, 110)
    if kind == "edit":
        block = prose(rng, 30) * 2 + prose(rng, 20)
        old, new = block[3], 250
        return [0] + block + prose(rng, 4), [new if t == old else t for t in block] + prose(rng, 30)
    if kind == "loop":
        phrase = prose(rng, 7)
        return [0] + prose(rng, 6), prose(rng, 10) + phrase * 8 + prose(rng, 20)
    if kind == "long":
        passage = prose(rng, 60)
        return [0] + passage + prose(rng, 5), passage[10:40] + prose(rng, 50)
    if kind == "phrases":
        stem = prose(rng, 4)
        return [0] + prose(rng, 8), [t for _ in range(14) for t in stem + prose(rng, 5)]
    raise ValueError(kind)


@dataclass
class Trace:
    name: str
    text: str
    drafter: str                 # model, ngram, hybrid
    policy: str                  # auto, fixed, heuristic, confidence
    k: int = 16
    guard: bool = False
    confidence: float = 0.4
    wrong: float = 0.3           # the drafter LM's error rate
    step_s: float = 0.02         # its drafting step
    read_s: float = 0.004        # what each further token of one forward costs it
    window: int = 0              # the model drafter's window (0: reads everything)
    costs: dict = field(default_factory=dict)   # TargetCosts fields
    carried: bool = False        # auto starts from costs an earlier answer measured
    answers: int = 1             # answers in a row on the same pair (each follows the last one's costs)
    max_tokens: int = 96
    temperature: float = 0.0
    seed: int = 0


TRACES = [
    Trace("prose-model-auto", "prose", "model", "auto"),
    Trace("prose-model-auto-hard", "prose", "model", "auto", wrong=0.8, step_s=0.05),
    Trace("prose-hybrid-auto-gpu", "prose", "hybrid", "auto", costs={"base": 0.02, "slope": 0.0005}, step_s=0.004),
    Trace("edit-hybrid-auto", "edit", "hybrid", "auto"),
    Trace("edit-ngram-auto", "edit", "ngram", "auto"),
    Trace("edit-ngram-auto-gpu", "edit", "ngram", "auto", costs={"base": 0.02, "slope": 0.0005}),
    Trace("loop-hybrid-auto-two-answers", "loop", "hybrid", "auto", answers=2, wrong=0.5),
    Trace("long-model-auto-window", "long", "model", "auto", window=8, carried=True, answers=2),
    Trace("long-hybrid-auto-window-dear", "long", "hybrid", "auto", window=8, carried=True, read_s=0.05),
    Trace("long-model-auto-reads-all", "long", "model", "auto", window=8, carried=True, read_s=0.0002),
    Trace("phrases-hybrid-auto", "phrases", "hybrid", "auto", wrong=0.25),
    Trace("phrases-hybrid-auto-two-answers", "phrases", "hybrid", "auto", answers=2, wrong=0.4, seed=2),
    Trace("prose-model-auto-refresh", "prose", "model", "auto", costs={"shift_at": 20, "shifted": 0.015,
                                                                       "wobble": 0.0}, step_s=0.008, wrong=0.25),
    Trace("prose-model-auto-sampled", "prose", "model", "auto", temperature=0.8, seed=3),
    Trace("edit-hybrid-auto-k6", "edit", "hybrid", "auto", k=6),
    Trace("prose-model-confidence-guard", "prose", "model", "confidence", k=4, guard=True, confidence=0.6,
          wrong=0.7, step_s=0.05),
    Trace("prose-model-confidence-guard-keeps-up", "prose", "model", "confidence", k=4, guard=True,
          confidence=0.5, wrong=0.2, step_s=0.005, costs={"shift_at": 40, "wobble": 0.0}),
    Trace("edit-hybrid-fixed-guard", "edit", "hybrid", "fixed", k=4, guard=True, wrong=0.6),
    Trace("loop-ngram-heuristic-guard", "loop", "ngram", "heuristic", k=3, guard=True),
    Trace("long-model-confidence-guard-window", "long", "model", "confidence", k=4, guard=True, window=8,
          carried=True),
    Trace("edit-hybrid-fixed", "edit", "hybrid", "fixed", k=4),
    Trace("prose-model-heuristic", "prose", "model", "heuristic", k=2),
    Trace("prose-model-confidence", "prose", "model", "confidence", k=5, confidence=0.7),
    Trace("loop-ngram-fixed-sampled", "loop", "ngram", "fixed", k=4, temperature=0.9, seed=5),
]


def build_policy(name: str, k: int, confidence: float, cost, guard: bool):
    """The policy the code under test builds for these options."""
    try:
        from specx.policy.policy import make
    except ImportError:   # the code these decisions were recorded with (commit b9a8fc8)
        from specx.policy.policy import DraftPolicy

        return DraftPolicy(name, k, confidence, cost=cost, guard=guard)
    return make(name, k, confidence, cost, guard)


def carried_costs():
    """What an earlier answer on this pair measured (verify costs, drafting step, calibration)."""
    from specx.policy.costmodel import CostModel

    cost = CostModel(verify_s={1: 0.10, 2: 0.11, 5: 0.13, 9: 0.15}, draft_step_s=0.006)
    cost.calibration.add((0.3, 0.5, 0.7, 0.9, 0.95, 0.99) * 10, 40)
    return CostModel.following(cost)


def make_drafter(trace: Trace, lm):
    from specx.drafters.hybrid import HybridDrafter
    from specx.drafters.model import ModelDrafter
    from specx.drafters.ngram import NgramDrafter

    if trace.drafter == "ngram":
        return NgramDrafter()
    model = ModelDrafter(lm, VOCAB, VOCAB, trace.window)
    return HybridDrafter(NgramDrafter(), model) if trace.drafter == "hybrid" else model


def run(trace: Trace, costs: list | None = None) -> list[dict]:
    """The loop's decisions on one trace: per answer, per round (copy k, model k), drafted, accepted,
    tokens kept, the draft and verify seconds, the notice; and the answer's notices and tokens. `costs`:
    a list that gets each answer's cost model at its end."""
    import specx.engine.loop as loop
    from specx.engine.types import Done, Round, Sampling
    from specx.policy.costmodel import CostModel

    if str(HERE.parent) not in sys.path:
        sys.path.insert(0, str(HERE.parent))
    from conftest import word_tokenizer

    clock, tokenizer = Clock(), word_tokenizer(VOCAB, EOS)
    prompt, answer = texts(trace.text, trace.seed)
    seq = prompt + answer + [EOS]
    target = FakeTarget(seq, clock, TargetCosts(**trace.costs), tokenizer)
    drafter = make_drafter(trace, FakeDrafterLM(seq, clock, trace.wrong, trace.step_s, trace.read_s))
    sampling = Sampling(temperature=trace.temperature, seed=trace.seed if trace.temperature else None)
    real_time, real_round_k = loop.time, loop.Generation._round_k
    answers, previous = [], carried_costs() if trace.carried else None
    for _ in range(trace.answers):
        ks: list[tuple[int, int]] = []

        def round_k(self, length, ks=ks):
            out = real_round_k(self, length)
            ks.append(tuple(out))
            return out

        policy = build_policy(trace.policy, trace.k, trace.confidence, CostModel.following(previous), trace.guard)
        loop.time, loop.Generation._round_k = clock, round_k
        try:
            events = list(loop.Generation(target, drafter, prompt, k=trace.k, max_tokens=trace.max_tokens,
                                          sampling=sampling, policy=policy))
        finally:
            loop.time, loop.Generation._round_k = real_time, real_round_k
        rounds = [e for e in events if isinstance(e, Round)][:len(ks)]   # not the detokenizer's tail
        done = next(e for e in events if isinstance(e, Done))
        answers.append({
            "rounds": [[list(k), r.drafted, r.accepted, len(r.token_ids), round(r.draft_s, 9), round(r.verify_s, 9),
                        r.notice] for k, r in zip(ks, rounds)],
            "notices": list(done.stats.notices), "reason": done.reason,
            "tokens": [t for r in rounds for t in r.token_ids]})
        previous = policy.cost
        if costs is not None:
            costs.append(policy.cost)
    return answers


def record() -> dict:
    return {trace.name: run(trace) for trace in TRACES}


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    data = record()
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(data, indent=None, separators=(",", ":")).replace('],[', '],\n[') + "\n")
    for name, answers in data.items():
        rounds = [r for a in answers for r in a["rounds"]]
        print(f"{name:42s} rounds {len(rounds):4d} drafted {sum(r[1] for r in rounds):4d} "
              f"accepted {sum(r[2] for r in rounds):4d} notices {sum(len(a['notices']) for a in answers)}")
