"""`specx config show|set|unset|path`: the defaults file, with the environment and built-ins beside it."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from ..state.settings import KEYS
from . import EXIT_CODES, app

config_app = typer.Typer(help="Show and change the defaults: a TOML file, below SPECX_* variables.",
                         no_args_is_help=True, rich_markup_mode=None)
app.add_typer(config_app, name="config",
              epilog="\b\nExamples:\n  specx config set model smollm2\n  specx config show\n\n" + EXIT_CODES)

KEY_HELP = "A setting: " + ", ".join(KEYS)


def _complete_key(incomplete: str) -> list[str]:
    return [k for k in KEYS if k.startswith(incomplete)]


@config_app.command(epilog="\b\nExamples:\n  specx config show\n  specx config show --json | jq .k")
def show(json_out: Annotated[bool, typer.Option("--json", help="One JSON object: key → value and source.")] = False
         ) -> None:
    """Every setting, its value and where it comes from (environment, config, preset, built-in)."""
    from ..state import settings
    from .output import write_stdout

    from .. import presets

    values = settings.resolve({}, preset=presets.defaults)
    if json_out:
        write_stdout(json.dumps({k: {"value": v, "source": s} for k, (v, s) in values.items()}) + "\n")
        return
    width = max(map(len, values))
    for name, (value, source) in values.items():
        shown = "(not set)" if value is None else json.dumps(value)
        origin = settings.KEYS[name].env if source == "environment" else source
        write_stdout(f"{name:<{width}}  {shown:<12}  {origin}\n")


@config_app.command("set", epilog="\b\nExamples:\n  specx config set model smollm2\n  specx config set k 6")
def set_(key: Annotated[str, typer.Argument(help=KEY_HELP, autocompletion=_complete_key)],
         value: Annotated[str, typer.Argument(help="The value (checked: numbers, true/false, choices).")]) -> None:
    """Set a default in the config file (written atomically)."""
    from ..state import settings
    from .output import note

    parsed = settings.set_value(key, value)
    note(f"{key} = {json.dumps(parsed)} in {settings.config_file()}")


@config_app.command(epilog="\b\nExample:\n  specx config unset temperature")
def unset(key: Annotated[str, typer.Argument(help=KEY_HELP, autocompletion=_complete_key)]) -> None:
    """Remove a default from the config file (the built-in value applies again)."""
    from ..state import settings
    from .output import note

    removed = settings.unset_value(key)
    note(f"{key} removed from {settings.config_file()}" if removed else f"{key} was not set in the config file")


@config_app.command(epilog="\b\nExample:\n  $EDITOR \"$(specx config path)\"")
def path() -> None:
    """Print the config file's path (SPECX_HOME moves it)."""
    from ..state import settings
    from .output import write_stdout

    write_stdout(f"{settings.config_file()}\n")
