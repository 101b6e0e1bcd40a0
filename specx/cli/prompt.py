"""Read the prompt from the argument and/or stdin; refuse undecodable or binary input."""
from __future__ import annotations

import sys

from ..runtime.errors import UsageError


def decode_stdin(data: bytes) -> str:
    """Strict UTF-8 with the byte offset of the first bad byte; NUL bytes refused."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise UsageError(f"stdin contains a NUL byte at offset {nul}: it looks like binary data",
                         "pipe text, not a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"stdin is not valid UTF-8 (byte offset {e.start})",
                         "convert the input to UTF-8, e.g. with iconv") from None


def check_argument(text: str) -> None:
    """argv bytes that are not UTF-8 arrive as lone surrogates; a tokenizer would choke on them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"the prompt argument is not valid UTF-8 (character {e.start})",
                         "convert it to UTF-8, or pipe the text on stdin") from None
    if "\x00" in text:
        raise UsageError("the prompt argument contains a NUL character", "pass text, not binary data")


def read_prompt(argument: str | None, command: str = "run") -> str:
    """Piped text first, then the argument; `-` means stdin only. No prompt at a terminal is an error."""
    use_stdin = argument == "-" or (not sys.stdin.isatty() if sys.stdin else False)
    if argument is None and (sys.stdin is None or sys.stdin.isatty()):
        raise UsageError("no prompt given",
                         f"pass one: `specx {command} MODEL \"your prompt\"`, pipe text on stdin, "
                         "or talk interactively with `specx chat MODEL`")
    text = argument if argument not in (None, "-") else ""
    check_argument(text)
    piped = decode_stdin(sys.stdin.buffer.read()) if use_stdin and sys.stdin is not None else ""
    prompt = f"{piped.rstrip()}\n\n{text}" if piped.strip() and text else (piped or text)
    if not prompt.strip():
        raise UsageError("the prompt is empty", "give a prompt as an argument or on stdin")
    return prompt
