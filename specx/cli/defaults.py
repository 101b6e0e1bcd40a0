"""A command's options: what was typed on the command line, then options.resolve for the rest."""
from __future__ import annotations

import os
from pathlib import Path

from .. import presets

# command parameter → option (options.py); no_stats is the negation of `stats`
PARAMS = {"model": "model", "drafter": "drafter", "draft_tokens": "k", "draft_policy": "draft_policy",
          "confidence": "confidence", "max_tokens": "max_tokens", "temperature": "temperature",
          "top_p": "top_p", "top_k": "top_k", "dtype": "dtype", "no_stats": "stats", "quant": "quant",
          "draft_dtype": "draft_dtype", "draft_quant": "draft_quant", "draft_vocab": "draft_vocab",
          "mem_budget": "mem_budget", "allow_disk_offload": "allow_disk_offload", "moe_offload": "moe_offload",
          "seed": "seed", "system": "system", "stop": "stop", "raw": "raw", "tree": "tree"}


def given(ctx, params: dict) -> dict:
    """The options typed on the command line (option name → value); the rest are left to the layers."""
    from typer._click.core import ParameterSource

    out = {}
    for p, name in PARAMS.items():
        source = ctx.get_parameter_source(p) if p in params else None
        if source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP):
            out[name] = (not params[p]) if p == "no_stats" else params[p]
    if out.get("stop") is not None:
        out["stop"] = tuple(out["stop"])
    return out


def looks_like_model(ref: str) -> bool:
    """A path that exists, a model-file name, or a bundled preset: never mistaken for a prompt."""
    if ref in ("", "-"):
        return False
    return (Path(ref).expanduser().exists() or ref.endswith((".gguf", ".toml")) or os.sep in ref
            or ref in presets.bundled())


def resolve(ctx, params: dict, prompt_param: str | None = "prompt", notify=None, tuned: bool = True):
    """(the command's Options, its prompt words). With a configured model, `specx run "PROMPT"` means that
    model: a lone positional that is not a model (an existing path or a preset name) is the prompt, and
    the choice is said on stderr."""
    from .. import options
    from ..state import settings

    typed = {n: v for n, v in given(ctx, params).items() if n != "model"}
    model, prompt = params.get("model"), params.get(prompt_param) if prompt_param else None
    configured, source = settings.resolve({}, tuned=None)["model"]
    if prompt_param and model is not None and configured and not looks_like_model(model) \
            and (not prompt or model == "-"):   # `specx run "PROMPT"`, `specx run - "PROMPT"`
        prompt, model = [model, *(prompt or ())], None
    if model:
        typed["model"] = model
    elif configured and notify:
        notify(f"model: {configured} (the default from the {where(source)})")
    resolved = options.resolve(typed, tuned=tuned)
    apply_color(resolved.color)
    return resolved, prompt


def where(source: str) -> str:
    return {"environment": "environment (SPECX_MODEL)", "config": f"config file {settings_file()}"}.get(
        source, source)


def settings_file():
    from ..state import settings

    return settings.config_file()


def apply_color(choice: str) -> None:
    """`color = never|always` becomes NO_COLOR / FORCE_COLOR unless the environment already says."""
    if choice == "never" and not os.environ.get("FORCE_COLOR"):
        os.environ.setdefault("NO_COLOR", "1")
    elif choice == "always" and not os.environ.get("NO_COLOR"):
        os.environ.setdefault("FORCE_COLOR", "1")
