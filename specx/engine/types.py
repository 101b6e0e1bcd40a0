"""Plain data passed between the engine and its callers: no torch import here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

StopReason = Literal["eos", "length", "stop", "context", "interrupted"]


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen; temperature 0 means greedy argmax."""

    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class Round:
    """One draft/verify round: what was committed and how long it took."""

    token_ids: tuple[int, ...]   # committed this round: accepted drafts + the target's token
    text: str                    # detokenised delta, may be "" (held back for UTF-8 or a stop string)
    drafted: int                 # tokens the drafter proposed this round
    accepted: int                # how many of them the target accepted (0..drafted)
    draft_s: float               # seconds spent drafting
    verify_s: float              # seconds spent in the target forward + verification
    from_draft: tuple[bool, ...] = ()  # per committed token: did it come from the drafter?
    pieces: tuple[str, ...] = ()       # per committed token: the text released when it was pushed
    notice: str = ""                   # a draft-policy decision the user must hear about (auto policy)
    tree: int = 0                      # a token tree's nodes verified this round (then `drafted`); 0: a chain


@dataclass
class Stats:
    """Running totals; names follow vLLM's spec-decode metrics."""

    prompt_tokens: int = 0
    reused: int = 0               # prompt tokens kept from the target's cache (an earlier answer read them)
    new_tokens: int = 0
    rounds: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_at: list[int] = field(default_factory=list)  # accepted_at[i]: rounds whose draft i was accepted
    drafted_at: list[int] = field(default_factory=list)   # drafted_at[i]: rounds that proposed a draft i
    prefill_s: float = 0.0
    draft_s: float = 0.0
    verify_s: float = 0.0
    decode_s: float = 0.0
    forward_s: float = 0.0        # model forwards (target + drafter) inside decode_s
    total_s: float = 0.0
    first_token_s: float | None = None
    peak_bytes: int = 0
    k: int = 0
    draft_policy: str = "fixed"
    drafter: str = "none"
    notices: list[str] = field(default_factory=list)   # policy decisions said to the user (auto)
    placement: str = ""           # where the weights live (the memory plan's summary)
    gpu_peak_bytes: int | None = None   # torch.cuda.max_memory_allocated, when a model is on a GPU
    experts: dict | None = None   # MoE expert cache: hits, misses, prefetches used, bytes moved
    tree_rounds: int = 0          # rounds that verified a token tree ...
    tree_nodes: int = 0           # ... the nodes they verified ...
    tree_accepted: int = 0        # ... and the length of the paths they accepted

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.accepted / self.rounds if self.rounds else 0.0

    @property
    def decode_tok_s(self) -> float:
        return self.new_tokens / self.decode_s if self.decode_s > 0 else 0.0

    @property
    def end_to_end_tok_s(self) -> float:
        return self.new_tokens / self.total_s if self.total_s > 0 else 0.0

    @property
    def mean_drafted(self) -> float:
        """The k actually used: tokens drafted per round, on average."""
        return self.drafted / self.rounds if self.rounds else 0.0

    @property
    def overhead_share(self) -> float:
        """Share of decoding time spent outside model forwards (the loop's own cost)."""
        return max(0.0, 1 - self.forward_s / self.decode_s) if self.decode_s > 0 else 0.0

    @property
    def mean_tree_nodes(self) -> float:
        return self.tree_nodes / self.tree_rounds if self.tree_rounds else 0.0

    @property
    def mean_tree_path(self) -> float:
        """Accepted path length per tree round."""
        return self.tree_accepted / self.tree_rounds if self.tree_rounds else 0.0

    @property
    def per_position_acceptance(self) -> list[float]:
        return [a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at)]

    def add_round(self, drafted: int, accepted: int, committed: int, draft_s: float, verify_s: float,
                  depth: int | None = None) -> None:
        """Fold one round into the totals; a tree round (`depth`: its deepest path) counts its nodes as
        drafted and its accepted path as accepted, and its depth in the per-position figures."""
        if depth is not None:
            self.tree_rounds, self.tree_nodes, self.tree_accepted = (self.tree_rounds + 1, self.tree_nodes + drafted,
                                                                     self.tree_accepted + accepted)
            drafted_here = depth
        else:
            drafted_here = drafted
        self.rounds += 1
        self.drafted += drafted
        self.accepted += accepted
        self.new_tokens += committed
        self.draft_s += draft_s
        self.verify_s += verify_s
        while len(self.drafted_at) < drafted_here:
            self.drafted_at.append(0)
            self.accepted_at.append(0)
        for i in range(drafted_here):
            self.drafted_at[i] += 1
            if i < accepted:
                self.accepted_at[i] += 1

    def as_dict(self) -> dict:
        """JSON-ready view with the derived rates."""
        return {
            "prompt_tokens": self.prompt_tokens, "reused_prompt_tokens": self.reused, "new_tokens": self.new_tokens,
            "rounds": self.rounds,
            "drafted": self.drafted, "accepted": self.accepted,
            "acceptance_rate": round(self.acceptance_rate, 4),
            "mean_acceptance_length": round(self.mean_acceptance_length, 4),
            "per_position_acceptance": [round(x, 4) for x in self.per_position_acceptance],
            "decode_tok_s": round(self.decode_tok_s, 3), "end_to_end_tok_s": round(self.end_to_end_tok_s, 3),
            "time_to_first_token_s": None if self.first_token_s is None else round(self.first_token_s, 4),
            "prefill_s": round(self.prefill_s, 4), "draft_s": round(self.draft_s, 4),
            "verify_s": round(self.verify_s, 4), "decode_s": round(self.decode_s, 4),
            "total_s": round(self.total_s, 4), "peak_bytes": self.peak_bytes, "k": self.k, "draft_policy": self.draft_policy,
            "mean_drafted": round(self.mean_drafted, 4), "drafter": self.drafter,
            "forward_s": round(self.forward_s, 4), "overhead_share": round(self.overhead_share, 4),
            "notices": list(self.notices), "placement": self.placement, "gpu_peak_bytes": self.gpu_peak_bytes,
            "experts": self.experts, "tree_rounds": self.tree_rounds,
            "mean_tree_nodes": round(self.mean_tree_nodes, 4), "mean_tree_path": round(self.mean_tree_path, 4),
        }


@dataclass(frozen=True)
class Done:
    """The end of a run: why it stopped and the final totals."""

    reason: StopReason
    stats: Stats


Event = Union[Round, Done]


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
