"""The speculative loop: propose k, verify k+1 in one target pass, accept a prefix, rewind, report."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import torch

from .sampling import warp
from .tree import cut_lead, judged, lead, tree_mask, tree_positions, verify_tree_greedy, verify_tree_sampled
from .verify import verify_greedy, verify_sampled
from .detok import TextStream
from .draft import Ask, Draft
from ..memory.probe import peak_rss_bytes
from ..policy.base import Policy, TreeRound
from ..state.limits import MAX_TREE
from ..policy.policy import make
from .types import Done, Event, Round, Sampling, Stats, common_prefix


def reused(target, prompt: list[int], reuse: int | None) -> int:
    """How many of the prompt's first tokens the answer keeps from the target's cache: at most `reuse` (None: no
    bound; 0: none), and only those the cache holds as plain decoding of them would (its record, LM.held), short
    of the last prompt token, which the first verify reads. A target without a record is trusted for `reuse`."""
    held = getattr(target, "held", None)
    if held is None:
        return reuse or 0
    shared = min(common_prefix(prompt, held), len(prompt) - 1)
    return shared if reuse is None else min(reuse, shared)


class Generation:
    """One run of the engine; iterate for events. `stats` stays readable if the run is cut short."""

    def __init__(self, target, drafter, prompt_ids: list[int], *, k: int, max_tokens: int,
                 sampling: Sampling, stop_strings: tuple[str, ...] = (), stop: threading.Event | None = None,
                 policy: Policy | None = None, reuse: int | None = 0, on_done: Callable[[], None] | None = None,
                 tree: int = 0):
        self.target, self.drafter, self.prompt = target, drafter, list(prompt_ids)
        self.reuse = reused(target, self.prompt, reuse)
        self.on_done = on_done   # called once the run ends (the pair keeps what it measured)
        self.k, self.max_tokens, self.sampling = k, max_tokens, sampling
        # token trees: at most `tree` nodes a verify (-1: as many as the cost model finds cheap; 0: chains),
        # where the target can verify one (a transformers model cannot: LM.trees says why)
        self.tree = tree if getattr(target, "trees", "chains only") == "" else 0
        self._room = 0
        self.policy = policy or make("fixed", k)
        # What a model drafter's pass over the whole prompt may cost, priced at the costs measured
        # before this answer: its first plain step often runs slow, which made drafting look paying
        # where it lost (benchmarks/results/2026-11-25-read).
        self.read_budget = self.policy.cost.read_budget(max_tokens - 1)
        self.text = TextStream(target.tokenizer, stop_strings)
        self.stop = stop or threading.Event()
        self.eos = target.eos_ids
        self.stats = Stats(prompt_tokens=len(self.prompt), reused=self.reuse, k=k, drafter=drafter.name,
                           draft_policy=self.policy.name, placement=getattr(target, "placement", ""))
        self.generator = torch.Generator().manual_seed(sampling.seed) if sampling.seed is not None else None
        self.context = min(target.max_context, drafter.max_context) if k else target.max_context

    def __iter__(self) -> Iterator[Event]:
        start = time.perf_counter()
        seq = list(self.prompt)  # grows in place: no per-round copy of the whole sequence
        self._prefill(seq)
        forward_before = self._forward_s()
        reason = None
        while reason is None:
            if self.stats.rounds == 1 and self.k:
                forward_before += self._prefill_drafter(seq)   # prefill, not decoding: out of the overhead figure
            k, model_k = self._round_k(len(seq))
            tb = time.perf_counter()
            self._between(seq)
            t0 = time.perf_counter()
            draft = self._propose(seq, k, model_k)                                            # 1. propose
            t1 = time.perf_counter()
            verify = self._verify_chain if draft.parents is None else self._verify_tree
            path_nodes, nxt, depth = verify(seq, draft)                # 2. verify, 3. accept, 4. rewind
            path, accepted = [draft.tokens[i] for i in path_nodes], len(path_nodes)
            kept, pieces, reason = self._finish(path + [nxt], len(seq))                       # 5. stop rules
            seq.extend(kept)
            t2 = time.perf_counter()
            self._learn(draft, accepted, t1 - t0, t2 - t1, path_nodes)                       # 6. adapt k
            self.stats.add_round(len(draft.tokens), accepted, len(kept), t1 - t0, t2 - t1, depth)
            self.stats.first_token_s = self.stats.first_token_s or (t2 - start)
            self.stats.decode_s += t2 - tb
            self.stats.forward_s = self._forward_s() - forward_before
            if reason is None and self.stop.is_set():
                reason = "interrupted"
            yield Round(tuple(kept), "".join(pieces), len(draft.tokens), accepted, t1 - t0, t2 - t1,
                        tuple(i < accepted for i in range(len(kept))), tuple(pieces), self._notice(),
                        len(draft.tokens) if depth is not None else 0)
        self.stats.total_s = time.perf_counter() - start
        self._resources()
        if self.on_done is not None:
            self.on_done()
        tail = self.text.flush()
        if tail:
            yield Round((), tail, 0, 0, 0.0, 0.0, ())
        yield Done(reason, self.stats)

    def _resources(self) -> None:
        """Peak memory (RSS; CUDA's allocator peak when a model is on a GPU) and the expert cache's counters."""
        self.stats.peak_bytes = peak_rss_bytes()
        if self.target.device.type == "cuda":
            self.stats.gpu_peak_bytes = int(torch.cuda.max_memory_allocated())
        cache = getattr(self.target, "experts", None)
        if cache is not None:
            self.stats.experts = cache.stats.as_dict()

    def _forward_s(self) -> float:
        return self.target.forward_s + getattr(self.drafter, "forward_s", 0.0)

    def _notice(self) -> str:
        """A policy decision the user must hear about (speculation turned off or on), or the drafter's own
        (a self-draft's search ending), once."""
        notice = self.policy.take_notice() or getattr(self.drafter, "take_notice", str)()
        if notice:
            self.stats.notices.append(notice)
        return notice

    def _prefill(self, seq: list[int]) -> None:
        t = time.perf_counter()
        if self.reuse:
            self.target.crop(self.reuse)
        else:
            self.target.reset()
        if len(seq) - 1 > self.target.cached:
            self.target.forward(seq[self.target.cached:-1], last_only=True)
        self.stats.prefill_s = time.perf_counter() - t

    def _prefill_drafter(self, seq: list[int]) -> float:
        """The drafter reads the prompt (and the first token) once the first token is out: the first
        round is plain, so the first token costs what it costs without a drafter; the drafter's prompt
        pass still counts as prefill. Under `auto` (or a tuned policy auto chose) a model drafter on
        a CPU reads the whole prompt where that fits its budget (CostModel.read_budget, priced
        before the answer), else its last window of it, and may sit the answer out, a hybrid's model
        likewise, which then only copies (said in a notice). Returns the seconds it spent in forwards."""
        t, forward = time.perf_counter(), self._forward_s()
        if self.policy.adaptive and hasattr(self.drafter, "sit_out"):
            self.policy.notice = self.policy.notice or self.drafter.sit_out(seq, self.reuse, self.read_budget)
        self.drafter.prefill(seq, self.reuse)
        self.stats.prefill_s += time.perf_counter() - t
        return self._forward_s() - forward

    def _between(self, seq: list[int]) -> None:
        """The drafter's work between rounds (a self-draft's search scoring a candidate on the target's
        cache, which holds seq[:-1]): in the answer's decoding time, outside the draft and verify times the
        policy prices drafting by."""
        if self.stats.rounds and self.k and hasattr(self.drafter, "between"):
            self.drafter.between(seq)

    def _propose(self, seq: list[int], k: int, model_k: int) -> Draft:
        """The drafter's draft as the policy trims it (auto: a copy to what its evidence earned, a
        model's draft to what is worth verifying; a copy's tree: its main copy so, its other continuations
        kept); where a copy is cut to nothing, the drafter's other draft if it has one (a hybrid's model),
        trimmed too. None in the first round, which is plain (see _prefill_drafter)."""
        if not self.stats.rounds:
            return Draft([], None)
        ask = self._ask(k, model_k)
        proposed = self.drafter.propose(seq, ask)
        if proposed.parents is not None and not proposed.lookup:
            return proposed   # a model's tree grew as the policy's stops allowed (drafters/branching.py)
        draft = self.policy.trim(proposed if proposed.parents is None else
                                 replace(proposed, tokens=proposed.tokens[:lead(proposed.parents)], parents=None))
        if proposed.parents is not None and draft.tokens:   # a copy's tree: its main copy cut as a chain's,
            return cut_lead(proposed, len(draft.tokens))      # its other continuations kept
        if proposed.lookup and proposed.tokens and not draft.tokens:
            other = self.drafter.instead(seq, ask)
            draft = draft if other is None else other if other.parents is not None else self.policy.trim(other)
        return draft

    def _round_k(self, length: int) -> tuple[int, int]:
        """How far a draft may go this round (a copy from the context), and how far a model drafter
        may (the policy's k), both clamped to what remains of the token budget and of both contexts."""
        if not self.k or not self.stats.rounds:
            return 0, 0   # the first round is plain (see _prefill_drafter)
        cap = max(0, min(self.max_tokens - self.stats.new_tokens, self.context - length) - 1)
        self._room = max(0, self.context - length - 1)   # a tree's nodes: the slots left behind the last token
        model_k = min(self.policy.next_k(), cap)
        return min(max(model_k, self.policy.copy_k), cap), model_k

    def _ask(self, k: int, model_k: int) -> Ask:
        """This round's request, with the policy's stops for a model drafter as numbers."""
        tree = self._tree_size(k, self._room)
        return Ask(k, self.sampling, self.generator, self.stop, model_k, self.policy.stops(model_k, tree), tree,
                   self.eos)

    def _tree_size(self, k: int, room: int) -> int:
        """The most nodes this round's draft tree may hold (0: a chain): `--tree N`, else what the cost model
        finds nearly as cheap to verify as the chain of k (CostModel.tree_nodes); never more than the context
        has room for. The drafter keeps the tree's depth within the chain's k."""
        if self.tree == 0 or not k:
            return 0
        nodes = self.tree if self.tree > 0 else self.policy.cost.tree_nodes(k, MAX_TREE)
        return max(0, min(nodes, room))

    def _accept(self, logits: torch.Tensor, draft) -> tuple[int, int]:
        tokens = torch.tensor(draft.tokens, dtype=torch.long)
        if self.sampling.greedy:   # argmax where the logits are (a GPU's), then compare on the CPU
            return verify_greedy(logits, tokens)
        s = self.sampling   # the coins come from a CPU generator: the law moves to the CPU
        probs = warp(logits, s.temperature, s.top_k, s.top_p).cpu()
        return verify_sampled(probs, tokens, draft.probs, self.generator)

    def _verify_chain(self, seq: list[int], draft: Draft) -> tuple[list[int], int, None]:
        """One target forward over the last token and the k drafts, the accepted prefix kept (the cache
        cropped behind it), the drafter told. Returns the accepted drafts' indices, the next token and None
        (no tree)."""
        logits = self.target.forward(seq[-1:] + draft.tokens)
        accepted, nxt = self._accept(logits, draft)
        self.target.crop(len(seq) + accepted)
        self.drafter.commit(len(draft.tokens), accepted)
        return list(range(accepted)), nxt, None

    def _verify_tree(self, seq: list[int], draft: Draft) -> tuple[list[int], int, int]:
        """One tree-masked target forward over the last token and the tree's nodes, the walk down it
        (engine/tree.py), the accepted path's cache slots moved behind the context (compact), the drafter
        told the path. Returns the path's nodes, the next token and the tree's depth."""
        tree, start = draft.tree, len(seq) - 1
        logits = self.target.forward(seq[-1:] + draft.tokens, positions=tree_positions(tree, start),
                                     mask=tree_mask(tree))
        if self.sampling.greedy:
            path, nxt = verify_tree_greedy(logits, tree)
        else:
            s = self.sampling
            probs = warp(logits, s.temperature, s.top_k, s.top_p).cpu()
            path, nxt = verify_tree_sampled(probs, tree, draft.probs, self.generator)
        self.target.compact(start + 1, [start + 1 + i for i in path])
        self.drafter.commit_tree(draft, path)
        return path, nxt, tree.depth

    def _learn(self, draft: Draft, accepted: int, draft_s: float, verify_s: float, nodes: list[int]) -> None:
        """The policy learns from the round: a chain's, or a tree's (`nodes`: its accepted path) with what its
        drafter forwards and its verify rows cost; a chain's drafting time with what of it the model drafter
        spent catching up on tokens it had not seen (Draft.read_s), which is not a drafted token's cost."""
        if draft.parents is None:
            self.policy.update(len(draft.tokens), accepted, draft_s, verify_s, draft.source, draft.made,
                               draft.confidences, draft.read_s)
            return
        said, passed = judged(draft, nodes)
        self.policy.update_tree(TreeRound(len(draft.tokens), draft.tree.depth, accepted, draft_s, verify_s,
                                          draft.source, said, passed, draft.levels))

    def _finish(self, new: list[int], length: int) -> tuple[list[int], list[str], str | None]:
        """Apply EOS, stop strings, the token budget and the context to this round's tokens."""
        kept, text = [], []
        for token in new:
            if token in self.eos:
                return kept, text, "eos"
            kept.append(token)
            text.append(self.text.push(token))
            if self.text.stopped:
                return kept, text, "stop"
            if self.stats.new_tokens + len(kept) >= self.max_tokens:
                return kept, text, "length"
            if length + len(kept) >= self.context:
                return kept, text, "context"
        return kept, text, None
