"""Measure configurations on a prompt suite: models load once, configurations alternate every unit."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.types import Sampling
from .suite import Prompt

if TYPE_CHECKING:
    from ..options import ModelOptions

WARMUP_TOKENS = 8


@dataclass(frozen=True)
class Config:
    """One way to generate: a specx drafter/policy/k, or a transformers peer (`hf-assisted`,
    `hf-stock-generate`, …)."""

    drafter: str = "none"
    k: int = 0
    policy: str = "fixed"
    confidence: float = 0.4
    peer: str = ""
    tuned: bool = False      # `--config tuned`: run as `specx run` runs it (the policy guarded: policy.Guarded)
    tree: int = 0            # token trees (`--tree`): 0 chains, -1 sized by measured costs, N at most N nodes

    @property
    def baseline(self) -> bool:
        return not self.peer and (self.drafter == "none" or self.k == 0)

    @property
    def label(self) -> str:
        if self.peer:
            return self.peer
        if self.baseline:
            return "none"
        from ..policy.tuned import HYBRID, SPECIAL, split_hybrid

        base, hybrid = split_hybrid(self.drafter)
        name = base if base in (*SPECIAL, "auto") else Path(base).stem or base
        name += HYBRID if hybrid else ""
        policy = f"confidence {self.confidence:g}" if self.policy == "confidence" else self.policy
        return f"{name} k={self.k} {policy}{tree_label(self.tree)}" + (" (tuned)" if self.tuned else "")

    def as_dict(self) -> dict:
        return {"label": self.label, "drafter": self.drafter, "k": self.k, "policy": self.policy,
                "confidence": self.confidence, "peer": self.peer or None, "baseline": self.baseline,
                "tuned": self.tuned, "tree": self.tree}


def tree_label(tree: int) -> str:
    """How a configuration's name shows its token trees: nothing for chains."""
    return "" if not tree else " tree auto" if tree < 0 else f" tree {tree}"


BASELINE = Config("none", 0)


@dataclass
class Sample:
    """One generation of one prompt by one configuration."""

    config: str
    prompt: str
    category: str
    repeat: int
    new_tokens: int
    total_s: float
    ttft_s: float | None = None
    draft_s: float = 0.0
    verify_s: float = 0.0
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_at: list[int] = field(default_factory=list)
    drafted_at: list[int] = field(default_factory=list)
    peak_bytes: int = 0
    tokens: tuple[int, ...] = ()

    @property
    def tok_s(self) -> float:
        """End to end (prefill included), the same clock for specx and the peers."""
        return self.new_tokens / self.total_s if self.total_s > 0 else 0.0

    @property
    def decode_tok_s(self) -> float | None:
        """Tokens after the first per second after it (prefill excluded); None without a first-token time."""
        if self.ttft_s is None or self.new_tokens < 2 or self.total_s <= self.ttft_s:
            return None
        return (self.new_tokens - 1) / (self.total_s - self.ttft_s)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "tokens"}
        out["tok_s"] = round(self.tok_s, 4)
        return out


@dataclass
class Measurements:
    configs: list[Config]
    prompts: list[Prompt]
    samples: list[Sample] = field(default_factory=list)
    precision: dict[str, str] = field(default_factory=dict)
    weights_bytes: dict[str, int] = field(default_factory=dict)
    interrupted: bool = False

    def complete_units(self) -> set[tuple[int, str]]:
        """(repeat, prompt) pairs that every configuration finished: the paired comparisons."""
        seen: dict[tuple[int, str], set[str]] = {}
        for s in self.samples:
            seen.setdefault((s.repeat, s.prompt), set()).add(s.config)
        labels = {c.label for c in self.configs}
        return {unit for unit, done in seen.items() if done >= labels}


def with_baseline(configs: list[Config]) -> list[Config]:
    """The baseline first, always, and no duplicates."""
    out = [BASELINE]
    for c in configs:
        if c.label not in {o.label for o in out}:
            out.append(c)
    return out


class Runner:
    """Loads each configuration's pair once (weights are shared by specx's loader) and runs prompts."""

    def __init__(self, model: "ModelOptions | str", configs: list[Config], prompts: list[Prompt], *,
                 max_tokens: int = 128, sampling: Sampling = Sampling(), notify: Callable[[str], None] | None = None):
        from ..options import ModelOptions

        self.base = model if isinstance(model, ModelOptions) else ModelOptions(model)   # what every row loads
        self.model, self.configs, self.prompts = self.base.model, with_baseline(configs), prompts
        self.dtype, self.max_tokens, self.sampling, self.notify = self.base.dtype, max_tokens, sampling, notify
        self.calls: dict[str, Callable[[Prompt, int], Sample]] = {}
        self.measurements = Measurements(self.configs, prompts)

    def load(self) -> None:
        from dataclasses import replace

        from ..api import prepare
        from .peers import describe_pair, peer_call, specx_call

        pairs = {}
        for c in self.configs:
            if c.peer:
                continue
            pairs[c] = pair = prepare(replace(self.base, drafter=c.drafter, k=0 if c.baseline else c.k), self.notify)
            self.calls[c.label] = specx_call(pair, c, self.sampling)
            self.measurements.precision[c.label], self.measurements.weights_bytes[c.label] = \
                describe_pair(pair, self.dtype)
        for c in self.configs:
            if c.peer:
                self.calls[c.label], self.measurements.precision[c.label], self.measurements.weights_bytes[c.label] \
                    = peer_call(c, pairs, self.sampling, self.dtype, self.model)

    def run(self, repeats: int, warmup: bool = True,
            progress: Callable[[str, Sample | None], None] | None = None) -> Measurements:
        """Warm up, then for every repeat and prompt run all configurations in a rotated order.

        Ctrl-C ends the measurement: finished samples are kept (`interrupted` is set)."""
        if not self.calls:
            self.load()
        m = self.measurements
        try:
            if warmup:
                for c in self.configs:
                    self.calls[c.label](self.prompts[0], min(WARMUP_TOKENS, self.max_tokens))
                    if progress:
                        progress(f"warm-up {c.label}", None)
            for rep in range(repeats):
                for i, prompt in enumerate(self.prompts):
                    shift = (rep * len(self.prompts) + i) % len(self.configs)
                    for c in self.configs[shift:] + self.configs[:shift]:   # rotate: drift cancels
                        sample = self.calls[c.label](prompt, self.max_tokens)
                        sample.repeat = rep
                        m.samples.append(sample)
                        if progress:
                            progress(c.label, sample)
        except KeyboardInterrupt:
            m.interrupted = True
        return m

