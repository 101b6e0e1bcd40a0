"""A multi-turn chat whose target and drafter KV caches survive between turns.

Each turn re-renders the whole conversation with the chat template (templates may re-render
history), finds the longest common token prefix with what the caches hold, and prefills only the
rest. When the conversation no longer fits the context, the oldest turns are dropped (the shared
prefix then shrinks to the system prompt, so the caches are rebuilt) and the caller is told.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import UsageError
from .types import Done, Sampling, Stats, common_prefix


def reusable(ids: list[int], cached: list[int]) -> int:
    """How many of a prompt's first ids the caches already hold (`cached`: what they were last filled
    with): the common prefix, short of the last prompt token, which verify feeds (Generation._prefill)."""
    return min(common_prefix(ids, cached), len(ids) - 1)


@dataclass
class TurnRecord:
    user: str
    text: str
    reason: str
    stats: Stats
    reused: int          # prompt tokens found in the caches
    prefilled: int       # prompt tokens forwarded this turn (the new ones)


@dataclass
class ChatSession:
    pair: object                                  # api.Pair: target, drafter, k
    system: str | None = None
    max_tokens: int = 512
    sampling: Sampling = field(default_factory=Sampling)
    draft_policy: str = "fixed"
    confidence: float = 0.4
    guard: bool = False                           # a tuned policy that `auto` chose (as `specx run`)
    tree: int = 0                                 # token trees (RunOptions.tree)
    notify: Callable[[str], None] | None = None
    messages: list[dict] = field(default_factory=list)   # user/assistant turns (no system)
    turns: list[TurnRecord] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)      # a prefix of both caches' contents

    @property
    def context(self) -> int:
        target, drafter = self.pair.target, self.pair.drafter
        return min(target.max_context, drafter.max_context) if self.pair.k else target.max_context

    def render(self, messages: list[dict]) -> list[int]:
        """Token ids of system + messages, ending with the assistant's generation prompt."""
        from .prompt import prompt_ids

        return prompt_ids(self.pair.target.tokenizer, messages, self.system)

    def _fit(self, messages: list[dict]) -> tuple[list[dict], list[int]]:
        """Drop the oldest turns until the prompt leaves room for an answer."""
        room = min(self.max_tokens, max(16, self.context // 4))
        ids, dropped = self.render(messages), 0
        while len(ids) > self.context - room and len(messages) > 1:
            cut = 2 if len(messages) > 2 and messages[1]["role"] == "assistant" else 1
            messages, dropped = messages[cut:], dropped + 1
            ids = self.render(messages)
        if len(ids) >= self.context:
            raise UsageError(f"this message needs {len(ids)} tokens but the context holds {self.context}",
                             "send a shorter message, or /reset")
        if dropped and self.notify:
            self.notify(f"context full: dropped the oldest {dropped} turn(s) to make room; "
                        "the caches are rebuilt from there")
        return messages, ids

    def ask(self, user: str, stop: threading.Event | None = None) -> Turn:
        """One turn: iterate the returned Turn for Round … Done events."""
        if not user.strip():
            raise UsageError("the message is empty", "type a message, or /exit")
        messages, ids = self._fit(self.messages + [{"role": "user", "content": user}])
        return Turn(self, user, messages, ids, stop or threading.Event())

    def reset(self) -> None:
        self.messages, self.cached = [], []

    def totals(self) -> dict:
        drafted = sum(t.stats.drafted for t in self.turns)
        accepted = sum(t.stats.accepted for t in self.turns)
        tokens = sum(t.stats.new_tokens for t in self.turns)
        decode = sum(t.stats.decode_s for t in self.turns)
        return {"turns": len(self.turns), "new_tokens": tokens, "drafted": drafted, "accepted": accepted,
                "acceptance_rate": accepted / drafted if drafted else 0.0,
                "decode_tok_s": tokens / decode if decode > 0 else 0.0,
                "prefilled": sum(t.prefilled for t in self.turns), "reused": sum(t.reused for t in self.turns)}


class Turn:
    """The events of one answer; the session learns the outcome when the events end."""

    def __init__(self, session: ChatSession, user: str, messages: list[dict], ids: list[int],
                 stop: threading.Event):
        from .loop import Generation

        pair = session.pair
        self.session, self.user, self.messages, self.ids, self.stop = session, user, messages, ids, stop
        self.reuse = reusable(ids, session.cached)
        policy = pair.policy(session.draft_policy, session.confidence, session.sampling, session.guard)
        self.generation = Generation(pair.target, pair.drafter, ids, k=policy.k_max, max_tokens=session.max_tokens,
                                     sampling=session.sampling, stop=stop, reuse=self.reuse, policy=policy,
                                     tree=session.tree,
                                     on_done=(lambda: pair.remember(session.sampling.greedy))
                                     if session.draft_policy == "auto" else None)
        self.stats, self.reuse = self.generation.stats, self.generation.reuse   # as far as the caches hold them
        # Prompt tokens this turn forwards: all but the cached prefix and the last one (fed to verify).
        # The previous answer's last token was never fed to the target, so it is forwarded now.
        self.prefilled = len(ids) - 1 - min(self.reuse, pair.target.cached)

    def __iter__(self) -> Iterator:
        session, committed, text = self.session, list(self.ids), []
        session.cached = []   # until the turn ends cleanly the caches are not trusted
        for event in self.generation:
            if isinstance(event, Done):
                session.cached = committed
                record = TurnRecord(self.user, "".join(text), event.reason, event.stats, self.reuse, self.prefilled)
                if event.reason != "interrupted":   # a cancelled answer leaves no trace in the history
                    session.messages = self.messages + [{"role": "assistant", "content": record.text}]
                    session.turns.append(record)
                self.record = record
            else:
                committed.extend(event.token_ids)
                text.append(event.text)
            yield event
