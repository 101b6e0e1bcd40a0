"""Which tokens a model's KV cache holds, so that the next answer keeps the longest prefix it shares with them
instead of reading its whole prompt again (llama.cpp's server and llama-cpp-python do the same).

A cache slot's keys and values are those plain decoding would hold for a sequence only when they were written by
forwards of that sequence's consecutive tokens through every layer, or are a verified tree's path moved into
place (`compact`). The record is therefore a prefix of the cache: the ids of the slots from 0 on that were
written so. Anything else ends it where it happened: a token tree until it is compacted, a forward past a gap,
and writes that do not go through the model's `forward` (a self-draft's forward that skips layers appends past
the record, and is cropped away before anything else reads the cache)."""
from __future__ import annotations

from collections.abc import Sequence


class Held:
    """The record of one cache: `slots`, the tokens written into its first slots (as far as they follow one
    another), and `plain`, how many of those hold what plain decoding of them would."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.slots: list[int] = []
        self.plain = 0
        self.tree: int | None = None   # the first slot of the tree (its levels) written on plain slots, if any

    def wrote(self, start: int, ids: Sequence[int], tree: bool = False) -> None:
        """A forward wrote `ids` into slots start, start+1, …; `tree`: a token tree's nodes (positions and a
        mask of a tree's), plain only once `compact` has moved a path of them into place."""
        if start > len(self.slots):   # past a gap the record cannot follow
            self.plain, self.tree = min(self.plain, len(self.slots)), None
            return
        del self.slots[start:]
        self.slots.extend(ids)
        on_plain = self.plain >= start
        self.plain = min(self.plain, start)
        if not tree:
            self.tree = None
            if on_plain:
                self.plain = len(self.slots)
        elif on_plain:
            self.tree = start
        elif self.tree != self.plain:   # a further level of the same tree keeps it; anything else ends it
            self.tree = None

    def crop(self, length: int) -> None:
        del self.slots[length:]
        self.plain = min(self.plain, length)
        self.tree = None

    def compact(self, start: int, slots: Sequence[int]) -> None:
        """The slots `slots` (ascending, ≥ start: a verified tree's accepted path) moved to start, start+1, …,
        the rest forgotten; the cache then holds what plain decoding of the path would (the engine's contract)."""
        slots = list(slots)
        known = start <= len(self.slots) and (not slots or slots[-1] < len(self.slots))
        if self.tree is None or start < self.tree or not known:
            self.crop(start)
            return
        self.slots = self.slots[:start] + [self.slots[s] for s in slots]
        self.plain, self.tree = len(self.slots), None

    def upto(self, length: int) -> list[int]:
        """The tokens a cache of `length` filled slots holds as plain decoding of them would."""
        return self.slots[:min(self.plain, length)]
