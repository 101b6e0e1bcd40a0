"""Self-speculation (`--drafter self`): the target drafts for itself with some of its layers left out (and,
on specx's block kernels, int8 activations), on its own weights and its own KV cache.

When asked, the target's cache holds seq[:-1]. The draft feeds seq[-1], then each drafted token, through
the active layers only, writing their slots at positions len(seq)-1 …; then the cache is cropped back to
len(seq)-1, so the verify forward rewrites every layer's slots there. The target's output never depends on
the draft: lossless by construction. It costs no memory beyond a few buffers.

Which layers it leaves out is searched during answers (skipsearch.py): one candidate at a time, scored
teacher-forced on the last context tokens (their slots saved and restored bit for bit around the scoring
forward), the search's time kept under SEARCH_SHARE of the answer's; the shape found is saved per model,
precision and machine (policy/selfskip.py), so later answers and processes draft with it at once."""
from __future__ import annotations

import contextlib
import dataclasses
import time

import torch

from ..engine.draft import Ask, Draft
from .model import ModelDrafter
from .skipsearch import Search, Shape

SEARCH_SHARE = 0.1   # the most of an answer's time the search may take (scoring forwards), so a first
                     # answer costs at most ~10% while the search runs; saved shapes cost nothing later
TF_ROWS = 16         # context tokens a candidate is scored on (teacher-forced): one forward of 16 rows
MIN_ROWS = 4         # fewer context tokens than this: nothing to score yet
TIMINGS = 2          # timed forwards of each, full model and candidate, per search step (the fastest counts):
                     # one each let a loaded machine's noise pick the shape (0.19× for 21 of 30 layers)


class SelfDrafter(ModelDrafter):
    """The target as its own drafter (a ModelDrafter whose forward is the target's with a Shape, on the
    target's cache, which it leaves as it found it); `search` changes the shape between rounds."""

    def __init__(self, lm, usable_vocab: int, search: Search, key: dict | None = None, head=None):
        super().__init__(lm, lm.vocab_size, usable_vocab)
        self.name = "self"
        self.head = head                       # VocabTrim over the target's output layer (lean decoder only)
        self.search, self.key = search, key    # key: where the shape is saved (None: not saved)
        self.lean = lean_decoder(lm)           # the lean decoder's forward takes a mode and a head, the dense one's not
        self.spent_s = 0.0                     # seconds in this drafter's forwards (drafts and scoring)
        self.searched_s = 0.0                  # ... of them scoring candidates, this answer
        self.step_s = 0.0                      # what the last search step took (the next is expected to)
        self.began = time.perf_counter()       # the answer's start (prefill)
        self.notice = ""
        self.sloped = False                    # the verify slope measured (once: it is the model's, not a shape's)

    @property
    def shape(self) -> Shape:
        return self.search.shape

    @property
    def forward_s(self) -> float:
        return self.spent_s

    def sit_out(self, seq: list[int], reuse: int = 0, budget: float | None = None) -> str:
        return ""   # it reads nothing: the target's cache is its own

    def prefill(self, seq: list[int], reuse: int = 0) -> None:
        """Nothing to read (the target's cache holds seq[:-1]); the answer's clock starts."""
        self.resting, self.began, self.searched_s = False, time.perf_counter(), 0.0
        if self.head is not None:
            self.head.restart(seq)

    def would_read(self, seq: list[int], reuse: int = 0) -> int:
        return 0

    def propose(self, seq: list[int], ask: Ask) -> Draft:
        """ModelDrafter's draft (greedy or sampled, the policy's stops) with the target's forward in this
        shape, always a chain: a tree's level forwards (ModelDrafter._tree_forward) run the full model and
        its commit would compact the target's own cache a second time."""
        base = len(seq) - 1
        if self.lm.cached != base:   # the loop's contract; anything else would draft from stale slots
            return Draft([], None)
        try:
            return super().propose(seq, dataclasses.replace(ask, tree=0))
        finally:
            self.lm.crop(base)

    def commit(self, drafted: int, accepted: int) -> None:
        pass   # the verify forward wrote every slot the target keeps; nothing of the draft's is left

    def take_notice(self) -> str:
        notice, self.notice = self.notice, ""
        return notice

    def _unread(self, seq: list[int]) -> list[int]:
        return seq[-1:]

    def _forward(self, ids: list[int], shape: Shape | None = None, last_only: bool = True) -> torch.Tensor:
        shape = shape or self.shape
        t = time.perf_counter()
        if self.lean:
            head = None if self.head is None else self.head.weights()
            logits = self.lm.model.forward(self.lm.cache, ids, skip=shape.skip, last_only=last_only,
                                           mode=shape.mode, head=head)
        else:   # the dense decoder: graphs of the shape's own on a GPU
            logits = self.lm.skipping(ids, shape.skip, last_only)
        self.spent_s += time.perf_counter() - t
        return logits

    # ---- the search ---------------------------------------------------------------------------------

    def between(self, seq: list[int]) -> None:
        """Between rounds (engine/loop.py, outside the draft time the policy prices): score the search's
        next candidate if its time is under SEARCH_SHARE of the answer's so far."""
        elapsed = time.perf_counter() - self.began
        if self.search.done or self.searched_s + self.step_s > SEARCH_SHARE * elapsed \
                or self.lm.cached != len(seq) - 1:
            return
        t = time.perf_counter()
        self.step(seq)
        self.step_s = time.perf_counter() - t
        self.searched_s += self.step_s

    def step(self, seq: list[int], rows: int = TF_ROWS) -> bool:
        """One search step on seq's last `rows` context tokens: score the next candidate, keep it if better,
        save the search's state where it changed; False when there is nothing (more) to score."""
        was_done = self.search.done
        shape = self.search.next()
        if shape is None and self.search.done and not was_done:
            self._save()   # the search just ended: its last measurements (the slope) are kept with it
        if shape is None or len(seq) - 1 < MIN_ROWS + 1:
            return False
        # the cost against the full model's forward over the same rows, timed alternately: a ratio of
        # back-to-back timings holds where a reference timed once drifts, and the fastest of TIMINGS
        # each where other processes share the cores (they only ever add time). At this drafter's first
        # step the full model's one-row forward, timed beside them, prices each verified row (the slope).
        full, full_s, one_s, seconds = Shape((), own_mode(self.lm)), [], [], []
        for _ in range(TIMINGS):
            if not self.sloped:
                one_s.append(self.teacher_forced(seq, full, 1)[1])
            full_s.append(self.teacher_forced(seq, full, rows)[1])
            alpha, took = self.teacher_forced(seq, shape, rows)
            seconds.append(took)
        slope = None
        if one_s:
            full_rows = min(rows, len(seq) - 2)   # matches() reads at most the context before the last token
            slope = max(0.0, (min(full_s) / max(min(one_s), 1e-9) - 1) / max(full_rows - 1, 1))
            self.sloped = True
        changed = self.search.record(shape, alpha, min(seconds) / max(min(full_s), 1e-9), slope)
        if changed or self.search.done or self.search.scored == 1:
            self._save()
        if self.search.done:
            self.notice = self.search.explain()
        return True

    def teacher_forced(self, seq: list[int], shape: Shape, rows: int = TF_ROWS) -> tuple[float, float]:
        """(how often the shape's argmax equals the next token over the last `rows` context tokens, the
        forward's seconds)."""
        hits, seconds = self.matches(seq, shape, rows)
        return float(hits.float().mean()), seconds

    def matches(self, seq: list[int], shape: Shape, rows: int = TF_ROWS) -> tuple[torch.Tensor, float]:
        """(per context token of the last `rows`: whether the shape's argmax before it is it, the forward's
        seconds). The cache's slots there are rewritten by the scoring forward, then restored."""
        base = len(seq) - 1
        start = base - min(rows, base - 1)
        with kept(self.lm.cache, start, base):
            self.lm.cache.crop(start)
            t = time.perf_counter()
            logits = self._forward(seq[start:base], shape, last_only=False)
            seconds = time.perf_counter() - t
        if self.head is None:
            guesses = logits[:, :self.usable_vocab].argmax(-1).cpu()
        else:   # the head's columns: the kept ids (those the scored context holds among them)
            guesses = self.head.ids[logits.argmax(-1).cpu()]
        return guesses == torch.tensor(seq[start + 1:base + 1]), seconds

    def _save(self) -> None:
        if self.key is not None:
            from ..policy import selfskip

            s = self.search
            selfskip.save(self.key, s.shape.as_dict(), done=s.done, alpha=s.alpha, cost=s.cost, scored=s.scored,
                          slope=s.slope)


@contextlib.contextmanager
def kept(cache, start: int, end: int):
    """Slots [start, end) of every layer and the cache's length, as they were before the block: saved
    (copies of those slots only) and written back bit for bit. The lean cache keeps keys in blocks of
    KEY_BLOCK slots (whole blocks are saved), the dense one keys and values in one tensor."""
    length = cache.length
    if hasattr(cache, "kv"):   # decoder/dense.py's DenseCache
        views = [cache.kv[:, :, :, start:end]]
    else:
        from ..cpu.attention import KEY_BLOCK

        views = [cache.k[:, :, start // KEY_BLOCK:-(-end // KEY_BLOCK)], cache.v[:, :, start:end]]
    saved = [v.clone() for v in views]
    try:
        yield
    finally:
        for view, copy in zip(views, saved):
            view.copy_(copy)
        cache.length = length


def for_target(target, usable_vocab: int, key: dict | None = None, seed: int = 0,
               draft_vocab: int = 0) -> tuple[SelfDrafter, str]:
    """The target's self-drafter, starting from the shape saved for `key` (else the first guess), and the
    sentence that says which. `draft_vocab` > 0: its drafts score that many of the output layer's rows and the
    context's (VocabTrim, lean decoder only)."""
    from ..policy import selfskip
    from .skipsearch import VERIFY_SLOPE, Search

    layers = target.model.config.num_hidden_layers
    modes = lean_modes(target)
    search = Search(layers, modes, seed=seed)
    said = f"searches which of its layers to leave out while it answers, starting from {search.shape.describe(layers)}"
    entry = selfskip.load(key) if key is not None else None
    if entry is not None:
        try:
            shape = Shape.from_dict(entry["shape"], layers, modes)
            search = Search(layers, modes, shape, seed=seed, done=bool(entry.get("done")),
                            alpha=float(entry.get("alpha", 0.0)), cost=float(entry.get("cost", 1.0)),
                            scored=int(entry.get("scored", 0)), slope=float(entry.get("slope", VERIFY_SLOPE)))
            said = f"drafts with {shape.describe(layers)}, {'found' if search.done else 'partly searched'} by an earlier run"
        except (TypeError, ValueError):
            pass
    head = None
    if draft_vocab and lean_decoder(target):
        from ..decoder import vocabtrim

        base = vocabtrim.keep_ids(target.tokenizer, usable_vocab, draft_vocab)
        head = vocabtrim.DraftHead(target.model.weights.output, base, usable_vocab)
        said += f"; it {vocabtrim.describe(base, target.vocab_size, context=True)}"
    return SelfDrafter(target, usable_vocab, search, key, head), said


def lean_decoder(lm) -> bool:
    """Whether `lm` runs on the CPU's lean decoder (its forward takes an activation mode and a head), not the
    dense CUDA one."""
    return hasattr(lm.model, "mode")


def own_mode(lm) -> str:
    """The activations the target itself runs with: the lean decoder's mode ("f32" or "q8"), the dense
    decoder's weight dtype ("bfloat16", "float16", "float32")."""
    return lm.model.mode if lean_decoder(lm) else str(lm.model.dtype).removeprefix("torch.")


def lean_modes(target) -> tuple[str, ...]:
    """The activation modes a self-draft may use: the target's own; on the lean decoder f32 and q8 both
    where specx's block kernels run (the reference linear is exact float32 whatever the mode)."""
    own = own_mode(target)
    if not lean_decoder(target):
        return (own,)
    from ..decoder import linear

    return (own, *({"f32", "q8"} - {own})) if linear._quant() is not None else (own,)


def search_fully(drafter: SelfDrafter, seq: list[int], rows: int = 4 * TF_ROWS) -> str:
    """`specx tune`'s search: from the saved (or first-guess) shape to a local optimum, every candidate
    scored on seq's last `rows` tokens (the target's cache is refilled with seq[:-1]); the sentence."""
    lm = drafter.lm
    lm.reset()
    lm.forward(seq[:-1], last_only=True)
    drafter.search.done, drafter.search.score = False, None   # re-score from here, more thoroughly
    while drafter.step(seq, rows):
        pass
    return drafter.search.explain()
