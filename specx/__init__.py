"""specx: lossless speculative decoding for local LLMs."""
from __future__ import annotations

__version__ = "0.1.0"


def load(model: str, drafter: str = "auto", **options):
    """Load a target and its drafter once (options as `specx run`: k, dtype, quant, mem_budget, …);
    pass the result as `model` to `generate` / `stream` to reuse the weights, and what `auto`
    measured in earlier answers."""
    from .api import prepare

    return prepare(model, drafter, **options)


def generate(model, prompt: str, **options) -> str:
    """Generate a completion; options as `specx run` (drafter, k, max_tokens, temperature, …)."""
    from .api import generate as _generate

    return _generate(model, prompt, **options)


def stream(model, prompt: str, **options):
    """Iterate over Round events, then one Done event."""
    from .api import stream as _stream

    return _stream(model, prompt, **options)


__all__ = ["__version__", "generate", "load", "stream"]
