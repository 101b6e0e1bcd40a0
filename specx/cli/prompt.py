"""Read the prompt from the argument and/or stdin; refuse undecodable or binary input."""
from __future__ import annotations

import sys

from ..errors import UsageError


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


def read_prompt(arguments: list[str] | str | None, command: str = "run") -> str:
    """The prompt from the arguments and stdin. `-` reads stdin; `- TEXT`: the piped text first, then TEXT;
    TEXT alone never reads stdin (a pipe that does not end, or a `while read` loop's next lines, must not
    become the prompt); no argument reads stdin unless it is a terminal (then it is an error)."""
    args = [arguments] if isinstance(arguments, str) else list(arguments or ())
    if len(args) > 2 or (len(args) == 2 and args[0] != "-"):
        raise UsageError(f"{len(args)} prompt arguments: give the prompt as one argument (quote it), "
                         "or `-` then one", f'e.g. `specx {command} MODEL "two words"` or '
                         f'`git diff | specx {command} MODEL - "Write a commit message"`')
    terminal = sys.stdin is None or sys.stdin.isatty()
    if not args and terminal:
        raise UsageError("no prompt given",
                         f"pass one: `specx {command} MODEL \"your prompt\"`, pipe text on stdin, "
                         "or talk interactively with `specx chat MODEL`")
    use_stdin = (not args or args[0] == "-") and sys.stdin is not None
    text = args[-1] if args and args[-1] != "-" else ""
    check_argument(text)
    piped = decode_stdin(sys.stdin.buffer.read()) if use_stdin else ""
    prompt = f"{piped.rstrip()}\n\n{text}" if piped.strip() and text else (piped or text)
    if not prompt.strip():
        raise UsageError("the prompt is empty", "give a prompt as an argument or on stdin")
    return prompt
