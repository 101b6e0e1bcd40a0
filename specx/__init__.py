"""specx: lossless speculative decoding for local LLMs."""
from __future__ import annotations

__version__ = "0.1.0"


def load(model: str, drafter: str = "auto", *, notify=None, **options):
    """Load a target and its drafter once (options as `specx run`'s: k, dtype, quant, mem_budget, …);
    pass the result as `model` to `generate` / `stream` to reuse the weights, and what `auto`
    measured in earlier answers."""
    from .api import prepare
    from .options import from_keywords

    return prepare(from_keywords(model, drafter=drafter, **options).model, notify)


def generate(model, prompt: str, **options) -> str:
    """Generate a completion; options as `specx run`'s (drafter, k, max_tokens, temperature, …)."""
    return "".join(getattr(event, "text", "") for event in stream(model, prompt, **options))


def stream(model, prompt: str, *, notify=None, stop_event=None, **options):
    """Iterate over Round events, then one Done event. `model`: a name or path, or what `load` returned
    (then only the answer's options apply: max_tokens, temperature, system, draft_policy, …)."""
    from .api import Pair, stream as _stream
    from .options import RUN_FIELDS, build_run, from_keywords

    if isinstance(model, Pair):
        loading = sorted(set(options) - set(RUN_FIELDS))
        if loading:
            raise TypeError(f"{loading[0]!r} is a loading option: give it to specx.load")
        return _stream(model, prompt, build_run(options), notify=notify, stop_event=stop_event)
    o = from_keywords(model, **options)
    return _stream(o.model, prompt, o.run, notify=notify, stop_event=stop_event)


__all__ = ["__version__", "generate", "load", "stream"]
