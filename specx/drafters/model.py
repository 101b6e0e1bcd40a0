"""A smaller model as the drafter: it drafts with its own KV cache and rolls it back to what the target accepted."""
from __future__ import annotations

import torch

from ..engine.sampling import greedy, sample, warp
from ..engine.draft import Ask, Draft, NoDrafter
from ..engine.types import common_prefix
from .treedraft import TreeDrafting


class ModelDrafter(TreeDrafting, NoDrafter):
    """A smaller LM of the same tokenizer: drafts k tokens autoregressively with its own KV cache.

    With VocabTrim (`lm.keep_ids`) the drafter scores a subset of the vocabulary; its ids are mapped
    back to the shared vocabulary and its draft distribution is zero elsewhere. A lean drafter's subset
    (`head`, vocabtrim.DraftHead) also holds the context's ids: it follows each answer's sequence. Its token
    trees are treedraft.py's."""

    CPU_WINDOW = 64   # on a CPU it reads at most the last 64 unread tokens at once (see _unread) ...
    SIT_OUT = 2       # ... and sits an answer out when it would read more than this many windows (sits_out),
                      # unless reading them all fits the answer's budget (reads_all)
    READ_PROBE = 32   # tokens it reads once, on a spare cache, to learn what reading a token costs
    SPLICE = 8        # a round reads at most the last 8 tokens it has not seen (_splice): 2 and 4 lost
                      # acceptance, 16 read more for none (benchmarks/results/2026-11-30-splice)

    def __init__(self, lm, target_vocab: int, usable_vocab: int, window: int = 0):
        self.lm = lm
        self.name = lm.name
        self.target_vocab = target_vocab
        self.usable_vocab = usable_vocab  # ids beyond the tokenizer are padding rows: never drafted
        self.head = getattr(lm, "head", None)   # a lean drafter's VocabTrim head, which follows the context
        self.max_context = lm.max_context
        self.window = window              # the most unread tokens it reads at once (0: all); see _unread
        self.offset = 0                   # a sequence position less its cache slot (the sequence's first tokens
                                          # it never read, and any text _splice skipped)
        self.held: list[int] = []         # the tokens in its cache, in order
        self.joined: tuple[int, int] | None = None   # this answer's first splice: (its slot, the offset before it)
        self.base = 0
        self.read_s: float | None = None  # seconds per token it reads in one forward (measured)
        self.step_s: float | None = None  # seconds of a forward of one token (measured; _catching_up)
        self.budget: float | None = None  # the seconds the policy gave its last prompt pass (plan)
        self.resting = False              # this answer: it sits out (sit_out) and drafts nothing
        self.reading = window             # this answer's window: 0 where it reads everything (reads_all)
        self._rest, self._reading = False, window

    @property
    def forward_s(self) -> float:
        return self.lm.forward_s

    @property
    def keep(self) -> torch.Tensor | None:
        """None, or the ids its logit columns are (VocabTrim; a DraftHead's grow between rounds)."""
        return self.head.ids if self.head is not None else self.lm.keep_ids

    def reads_all(self, unread: int, budget: float | None) -> bool:
        """Whether reading `unread` tokens at once costs at most `budget` seconds (what drafting is
        expected to save over the answer, CostModel.read_budget; None: not priced, so no).
        What reading a token costs against a drafting step differs several-fold between CPUs
        (benchmarks/results/2026-11-25-read), so it is measured, once: READ_PROBE tokens on a spare
        cache (then again on every long prompt read)."""
        if budget is None or not unread:
            return False
        if self.read_s is None:
            spare, ids = self.lm.fresh(), list(range(self.READ_PROBE))
            spare.forward(ids, last_only=True)
            self.read_s = spare.forward_s / len(ids)
        return unread * self.read_s <= budget

    def sit_out(self, seq: list[int], reuse: int = 0, budget: float | None = None) -> str:
        """Asked before an answer by `auto` (and by a tuned policy auto chose), with the seconds its
        prompt pass may cost: it reads the whole prompt where that fits, else its last `window`
        tokens, and sits out (drafts nothing: the target decodes plainly) where those would be less
        than half of it: drafting from a long prompt's tail lost to plain decoding
        (benchmarks/results/2026-11-25-guard). The sentence that says it sits out, or ""."""
        self._rest = self.plan(seq, reuse, budget)
        return f"drafter: off for this answer: {self.too_little(seq, reuse)}" if self._rest else ""

    def plan(self, seq: list[int], reuse: int = 0, budget: float | None = None) -> bool:
        """How it reads the next answer's prompt (all of it, or its last `window` tokens), and
        whether it would see less than half of it (more than SIT_OUT windows unread, too dear to
        read whole): then it would draft from a fragment, and should sit out."""
        unread, self.budget = self.would_read(seq, reuse), budget
        whole = self.window and unread > self.window and self.reads_all(unread, budget)
        self._reading = 0 if whole else self.window
        return bool(self._reading) and unread > self.SIT_OUT * self.window

    def too_little(self, seq: list[int], reuse: int = 0) -> str:
        """Why it sits out, in words."""
        unread = self.would_read(seq, reuse)
        cost = (f"; reading them all would cost {unread * self.read_s:.2f} s, more than drafting is expected "
                f"to save ({self.budget:.2f} s)" if self.read_s and self.budget is not None else "")
        return (f"{self.name} would read {self.window} of the {unread} prompt tokens "
                f"it has not seen, too little to draft from{cost}")

    def prefill(self, seq: list[int], reuse: int = 0) -> None:
        """Cache seq[:-1] (at most its last `window` tokens when more are unread and it does not
        read them all); the first `reuse` tokens may already be there (a chat turn keeps them), as
        far as its cache really holds them. Nothing while it sits the answer out (sit_out)."""
        self.resting, self.reading = self._rest, self._reading
        self._rest, self._reading = False, self.window
        if self.resting:
            return
        if self.head is not None:
            self.head.restart(seq)
        self._unsplice()
        kept = self._kept(seq, reuse)
        if kept:
            self._crop(kept)
        else:
            self.lm.reset()
            self.offset, self.held = 0, []
        unread = self._unread(seq[:-1])
        if unread:
            before = self.lm.forward_s
            self._forward(unread)
            if len(unread) >= self.READ_PROBE:   # what reading costs, measured again on a real prompt
                self.read_s = (self.lm.forward_s - before) / len(unread)

    def would_read(self, seq: list[int], reuse: int = 0) -> int:
        """How many tokens prefill(seq, reuse) would need to read with no window: seq[:-1] beyond what
        its cache keeps."""
        self._unsplice()
        kept = self._kept(seq, reuse)
        return len(seq) - 1 - (self.offset + kept if kept else 0)

    def _kept(self, seq: list[int], reuse: int) -> int:
        """How many tokens of its cache an answer keeps: those of the prompt's first `reuse` it holds, as its
        own count says and its model's record of the cache (LM.held) confirms (another user of the same model
        may have written over them)."""
        if reuse <= self.offset:
            return 0
        want = seq[self.offset:reuse]
        record = getattr(self.lm, "held", None)
        kept = common_prefix(self.held, want)
        return kept if record is None else min(kept, common_prefix(record, want))

    def _unread(self, seq: list[int]) -> list[int]:
        """The tokens of seq its cache lacks. More than this answer's window of them (a long prompt,
        a long stretch of plain decoding): it starts afresh on the last `window`, since where reading
        a token costs a third of a drafting step the far context tells a small drafter little that
        the n-gram lookup does not copy anyway (benchmarks/results/2026-11-24-firstplain)."""
        unread = len(seq) - self.offset - len(self.held)
        if self.reading and unread > self.reading:
            self.lm.reset()
            self.offset, self.held, self.joined = len(seq) - self.reading, [], None
        return seq[self.offset + len(self.held):]

    def _splice(self, seq: list[int]) -> None:
        """Bound a round's catching up: where its cache holds context and lacks more than SPLICE tokens of seq (a
        long copy the target accepted, a stretch of plain rounds), it skips all but their last SPLICE, its
        positions closing up over the gap (its cache then holds the text as if the skipped part had never been
        written: rotary positions are relative). Reading a long copy whole cost more than plain decoding would
        have in the answer's last round, the skipped text is mostly the context's own, and acceptance held
        (benchmarks/results/2026-11-30-splice). Prompts are read as before (prefill, _unread's window)."""
        gap = len(seq) - self.offset - len(self.held) - self.SPLICE
        if self.held and gap > 0:
            self.joined = self.joined or (len(self.held), self.offset)
            self.offset += gap

    def _unsplice(self) -> None:
        """Before an answer: its cache up to the last answer's first splice, the part that holds the sequence as
        it is (a chat's next turn keeps it, _kept)."""
        if self.joined is not None:
            slot, self.offset = self.joined
            self.joined = None
            self._crop(slot)

    def _forward(self, ids: list[int]) -> torch.Tensor:
        logits = self.lm.forward(ids, last_only=True)
        self.held.extend(ids)
        return logits

    def _crop(self, length: int) -> None:
        del self.held[length:]
        self.lm.crop(length)

    def propose(self, seq: list[int], ask: Ask) -> Draft:
        """Up to ask.model_limit tokens, ending early at the policy's stops (Ask.stops): after a token
        it gives less than the confidence floor, or once the chance that all its tokens are accepted
        falls below the floor for that many (a further token would likely be drafted for nothing); and at
        a token that ends the answer (Ask.eos)."""
        if self.resting:
            return Draft([], None)
        if self.head is not None:
            self.head.follow(seq)
        if ask.tree and ask.model_limit and getattr(self.lm, "trees", None) == "":
            return self._propose_tree(seq, ask)   # (a tree of no depth reads nothing, as a chain of none)
        self._splice(seq)
        ids, tokens, probs, confidences, survival = self._unread(seq), [], [], [], 1.0
        self.base = len(seq) - self.offset
        sampling, stops = ask.sampling, ask.stops
        scored, caught_up = stops.scored, 0.0
        for _ in range(ask.model_limit):
            if ask.stop is not None and ask.stop.is_set():
                break
            before = self.lm.forward_s
            logits = self._logits(ids)
            caught_up = caught_up or self._catching_up(len(ids), self.lm.forward_s - before)
            if sampling.greedy:
                index = int(greedy(logits)[0])
                confidence = float(torch.softmax(logits[0].float(), -1)[index]) if scored else None
            else:
                q = warp(logits, sampling.temperature, sampling.top_k, sampling.top_p).cpu()   # CPU generator
                index = int(sample(q, ask.generator)[0])
                probs.append(q[0])
                confidence = float(q[0, index])
            token = index if self.keep is None else int(self.keep[index])
            tokens.append(token)
            if confidence is not None:
                confidences.append(confidence)
            ids = [token]
            if token in ask.eos:
                break  # the answer ends here: nothing after it is verified
            if stops.min_confidence is not None and confidence < stops.min_confidence:
                break  # the drafter doubts this token: let the target speak sooner
            if stops.floors is not None:
                survival *= stops.chance(confidence)
                floor = stops.floor(len(tokens))
                if floor is not None and survival < floor:
                    break  # a further token would likely be drafted for nothing
        return Draft(tokens, self._pad(probs) if probs else None, confidences=tuple(confidences), made=len(tokens),
                     read_s=caught_up)

    def _catching_up(self, ids: int, seconds: float) -> float:
        """What a forward of `ids` tokens cost beyond a drafting step where it read more than a round's usual
        two (the target's token, and the last draft where all were accepted): the tokens of plain rounds or
        copies it had not seen (Draft.read_s). One-token forwards keep the step's time, averaged over the
        last two: a first forward's excess is then known from the first draft after a one-token one."""
        if ids == 1:
            self.step_s = seconds if self.step_s is None else (self.step_s + seconds) / 2
        if ids <= 2 or self.step_s is None:
            return 0.0
        return max(seconds - self.step_s, 0.0)

    def _logits(self, ids: list[int]) -> torch.Tensor:
        """(1, V') scores for the next token over what this drafter may propose."""
        logits = self._forward(ids)
        return logits if self.keep is not None else logits[:, :self.usable_vocab]

    def _pad(self, probs: list[torch.Tensor]) -> torch.Tensor:
        """Draft probabilities over the target's vocabulary (zero where the drafter cannot propose)."""
        q = torch.zeros(len(probs), self.target_vocab)
        local = torch.stack(probs)
        if self.keep is not None:
            inside = self.keep < self.target_vocab
            q[:, self.keep[inside]] = local[:, inside]
        else:
            width = min(self.usable_vocab, self.target_vocab)
            q[:, :width] = local[:, :width]
        return q

    def commit(self, drafted: int, accepted: int) -> None:
        # The cache holds the round's context plus drafts 1..made-1 (made >= drafted); keep the accepted ones.
        if self.resting:
            return
        self._crop(self.base + min(accepted, max(drafted - 1, 0)))
