"""Fill the options a user did not type from SPECX_* variables, the config file, tuned values, presets."""
from __future__ import annotations

import os
from pathlib import Path

from .. import presets
from ..state import settings

# command parameter → settings key (no_stats is the negation of `stats`)
PARAMS = {"model": "model", "drafter": "drafter", "draft_tokens": "k", "draft_policy": "draft_policy",
          "confidence": "confidence", "max_tokens": "max_tokens", "temperature": "temperature",
          "top_p": "top_p", "top_k": "top_k", "dtype": "dtype", "no_stats": "stats"}

EXPLICIT = "__explicit__"   # fill() lists here the options set by flag, SPECX_* or the config file

# issue 7 (`specx tune`) plugs its lookup in here: (model, settings so far) -> {key: value}
lookup_tuned: settings.Tuned | None = None


def _given(ctx, name: str) -> bool:
    from typer._click.core import ParameterSource

    source = ctx.get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def looks_like_model(ref: str) -> bool:
    """A path that exists, a model-file name, or a bundled preset: never mistaken for a prompt."""
    if ref in ("", "-"):
        return False
    return (Path(ref).expanduser().exists() or ref.endswith((".gguf", ".toml")) or os.sep in ref
            or ref in presets.bundled())


def fill(ctx, params: dict, prompt_param: str | None = "prompt", notify=None) -> dict:
    """`params` (the command's arguments) with every option not on the command line resolved.

    With a configured model, `specx run "PROMPT"` means that model: a lone positional that is not a
    model (an existing path or a preset name) is the prompt, and the choice is said on stderr."""
    params = dict(params)
    flags = {key: params[p] for p, key in PARAMS.items() if p in params and _given(ctx, p)}
    if "no_stats" in params and "stats" in flags:
        flags["stats"] = not params["no_stats"]
    flags.pop("model", None)
    model = params.get("model")
    configured, source = settings.resolve({}, tuned=None)["model"]
    if prompt_param and model is not None and configured and not looks_like_model(model) \
            and (not params.get(prompt_param) or model == "-"):   # `specx run "PROMPT"`, `specx run - "PROMPT"`
        params[prompt_param], model = [model, *(params.get(prompt_param) or ())], None
    if not model and configured:
        model = configured
        if notify:
            notify(f"model: {configured} (the default from the {where(source)})")
    params["model"] = model
    values = settings.resolve({**flags, "model": model} if model else flags, tuned=lookup_tuned,
                              preset=presets.defaults)
    for p, key in PARAMS.items():
        if p in params and p != "model" and not _given(ctx, p):
            value, _ = values[key]
            params[p] = (not value) if p == "no_stats" else value
    apply_color(values["color"][0])
    params[EXPLICIT] = {p for p, key in PARAMS.items()   # outrank tuned values (`specx tune`)
                        if p in params and values[key][1] in ("flag", "environment", "config")}
    return params


def where(source: str) -> str:
    return {"environment": "environment (SPECX_MODEL)", "config": f"config file {settings.config_file()}"}.get(
        source, source)


def apply_color(choice: str) -> None:
    """`color = never|always` becomes NO_COLOR / FORCE_COLOR unless the environment already says."""
    if choice == "never" and not os.environ.get("FORCE_COLOR"):
        os.environ.setdefault("NO_COLOR", "1")
    elif choice == "always" and not os.environ.get("NO_COLOR"):
        os.environ.setdefault("FORCE_COLOR", "1")
