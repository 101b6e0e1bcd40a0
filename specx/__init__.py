"""specx: lossless speculative decoding for local LLMs."""
from __future__ import annotations

__version__ = "0.1.0"


def generate(model: str, prompt: str, **options) -> str:
    """Generate a completion; options as `specx run` (drafter, k, max_tokens, temperature, …)."""
    from .runtime.api import generate as _generate

    return _generate(model, prompt, **options)


def stream(model: str, prompt: str, **options):
    """Iterate over Round events, then one Done event."""
    from .runtime.api import stream as _stream

    return _stream(model, prompt, **options)


__all__ = ["__version__", "generate", "stream"]
