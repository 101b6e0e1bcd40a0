"""Incremental detokenisation with stop strings: text is released only when it is final."""
from __future__ import annotations


class TextStream:
    """Turns committed token ids into safe text deltas; work per token is O(window), not O(length)."""

    def __init__(self, tokenizer, stop_strings: tuple[str, ...] = ()):
        self.tokenizer = tokenizer
        self.stops = tuple(s for s in stop_strings if s)
        self.ids: list[int] = []
        self.prefix = 0      # ids before this are fully rendered and never looked at again
        self.read = 0        # ids before this have been turned into text
        self.held = ""       # decoded text not yet released (could start a stop string)
        self.tail = ""       # last released characters, to find a stop string spanning rounds
        self.stopped = False

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def push(self, token: int) -> str:
        """Add one token; return the text that is now final ("" while held back, and after a stop)."""
        if self.stopped:
            return ""
        self.ids.append(token)
        before = self._decode(self.ids[self.prefix:self.read])
        after = self._decode(self.ids[self.prefix:])
        if after.endswith("\ufffd") or len(after) <= len(before):
            return ""  # an incomplete UTF-8 sequence: wait for the next token
        self.held += after[len(before):]
        self.prefix, self.read = self.read, len(self.ids)
        return self._release()

    def _release(self) -> str:
        if not self.stops:
            out, self.held = self.held, ""
            return out
        window = self.tail + self.held
        hits = [window.find(s) for s in self.stops if s in window]
        if hits:
            self.stopped = True
            cut = min(hits) - len(self.tail)
            out, self.held = self.held[:max(cut, 0)], ""
            return out
        keep = self._partial_stop_len(window)
        out = self.held[:len(self.held) - keep] if keep else self.held
        self.held = self.held[len(out):]
        self.tail = (self.tail + out)[-max(len(s) for s in self.stops):]
        return out

    def _partial_stop_len(self, text: str) -> int:
        """Length of the longest suffix of text that is a proper prefix of a stop string."""
        best = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(text)), best, -1):
                if text.endswith(s[:n]):
                    best = n
                    break
        return best

    def flush(self) -> str:
        """At the end of the run: whatever is still held is final."""
        out = "" if self.stopped else self.held + self._decode(self.ids[self.read:])
        self.held = ""
        return out
