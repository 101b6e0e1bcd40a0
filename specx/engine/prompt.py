"""The prompt as token ids: the model's chat template, or the raw text. Every way in (`specx run`,
`chat`, `bench`, `tune`, the Python API) builds its ids here."""
from __future__ import annotations

from ..errors import UsageError


def prompt_ids(tokenizer, prompt: "str | list[dict]", system: str | None = None, raw: bool = False) -> list[int]:
    """Token ids of the system message and the conversation (a string is one user message), ending where
    the assistant answers: through the chat template unless `raw` or the model has none; else the texts
    joined by blank lines, with the tokenizer's special tokens."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise UsageError("the prompt is empty", "give a prompt as an argument or on stdin")
        prompt = [{"role": "user", "content": prompt}]
    messages = ([{"role": "system", "content": system}] if system else []) + list(prompt)
    if not raw and getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    text = "\n\n".join(m["content"] for m in messages)
    return tokenizer(text, add_special_tokens=True)["input_ids"]
