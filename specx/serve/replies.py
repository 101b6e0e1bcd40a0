"""Replies in the OpenAI wire format: whole answers, stream chunks (server-sent events ending in
`[DONE]`), usage, and specx's own `specx` object (drafted, accepted, acceptance, tok/s, policy, k).
Pure: dicts in, dicts and bytes out."""
from __future__ import annotations

import json
import time
import uuid

FINISH = {"eos": "stop", "stop": "stop", "length": "length", "context": "length"}   # engine → OpenAI
OBJECT = {"chat": ("chat.completion", "chat.completion.chunk", "chatcmpl-"),
          "completion": ("text_completion", "text_completion", "cmpl-")}


class Reply:
    """The frame of one answer: its id, time and model, and how each piece of it is written."""

    def __init__(self, kind: str, model: str):
        self.kind, self.model = kind, model
        self.id = OBJECT[kind][2] + uuid.uuid4().hex[:24]
        self.created = int(time.time())

    def _frame(self, chunk: bool, choices: list) -> dict:
        return {"id": self.id, "object": OBJECT[self.kind][1 if chunk else 0], "created": self.created,
                "model": self.model, "choices": choices}

    def _choice(self, text: str | None, finish: str | None, chunk: bool, first: bool = False) -> dict:
        if self.kind == "completion":
            return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
        if chunk:
            delta = ({"role": "assistant"} if first else {}) | ({"content": text} if text is not None else {})
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None,
                "finish_reason": finish}

    def whole(self, text: str, reason: str, stats, reused: int = 0) -> dict:
        """The non-streamed reply."""
        return self._frame(False, [self._choice(text, FINISH.get(reason, "stop"), False)]) | {
            "usage": usage(stats), "specx": specx_stats(stats, reason, reused)}

    def first(self) -> bytes:
        """A chat stream opens with the assistant's role (as OpenAI's does); completions start with text."""
        return sse(self._frame(True, [self._choice("", None, True, first=True)]))

    def piece(self, text: str) -> bytes:
        return sse(self._frame(True, [self._choice(text, None, True)]))

    def last(self, reason: str, stats, reused: int = 0, include_usage: bool = False) -> bytes:
        """The finishing chunk (finish_reason, usage, specx); with include_usage, OpenAI's usage-only
        chunk too; then `[DONE]`."""
        out = sse(self._frame(True, [self._choice(None if self.kind == "chat" else "", FINISH.get(reason, "stop"),
                                                  True)]) | {"usage": usage(stats),
                                                             "specx": specx_stats(stats, reason, reused)})
        if include_usage:
            out += sse(self._frame(True, []) | {"usage": usage(stats)})
        return out + DONE


DONE = b"data: [DONE]\n\n"


def sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def usage(stats) -> dict:
    return {"prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.new_tokens,
            "total_tokens": stats.prompt_tokens + stats.new_tokens}


def specx_stats(stats, reason: str, reused: int = 0) -> dict:
    """What speculation did for this answer (names as `specx run --json`'s stats, docs/output.md)."""
    return {"drafter": stats.drafter, "draft_policy": stats.draft_policy, "k": stats.k, "drafted": stats.drafted,
            "accepted": stats.accepted, "acceptance_rate": round(stats.acceptance_rate, 4),
            "decode_tok_s": round(stats.decode_tok_s, 3), "end_to_end_tok_s": round(stats.end_to_end_tok_s, 3),
            "time_to_first_token_s": None if stats.first_token_s is None else round(stats.first_token_s, 4),
            "reused_prompt_tokens": reused, "reason": reason}


def error_event(body: dict) -> bytes:
    """An error after the stream began (the status is already sent): one event with the error object."""
    return sse(body) + DONE


def models(model: str, created: int) -> dict:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": created, "owned_by": "specx"}]}
