"""`specx tune MODEL`: measure k and the draft policies on this machine, remember the fastest for `specx run`."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, output

EXAMPLES = """\b
Examples:
  specx tune ./target.gguf --drafter ./drafter.gguf
  specx tune smollm2 --drafter ngram --prompts my-prompts.toml
  specx tune --show
  specx tune ./target.gguf --reset
"""


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def tune(
    model: Annotated[Optional[str], typer.Argument(help="Target: a GGUF file, a Hugging Face model folder, or a preset name.")] = None,
    drafter: Annotated[str, typer.Option("--drafter", "-d", help="auto, ngram, self (also searches which layers it leaves out), or a model (file/folder/preset).")] = "auto",
    prompts: Annotated[Optional[str], typer.Option("--prompts", help="Calibrate on your own prompts (all of them) instead of one bundled prompt per category.")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="New tokens per prompt.")] = 64,
    repeats: Annotated[int, typer.Option("--repeats", "-r", help="Measured runs of every prompt and configuration.")] = 2,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto = float32 on CPU).")] = "auto",
    quant: Annotated[str, typer.Option("--quant", help="Target weights on CPU: auto (a GGUF file as it is, int8 activations; else none), none, q8, fp16, int8, int4; `specx run` uses the result with the same --quant.")] = "auto",
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="Tune for greedy (0) or for sampling (> 0).")] = 0.0,
    show: Annotated[bool, typer.Option("--show", help="List the tuned settings and exit.")] = False,
    reset: Annotated[bool, typer.Option("--reset", help="Forget the tuned settings (of MODEL, or all) and exit.")] = False,
) -> None:
    """Sweep k (1-8), the draft policies and token trees; save the fastest measured setting for `specx run` (or "speculation off")."""
    from ..policy import tuned
    from ..errors import UsageError

    if show:
        return show_tuned()
    if reset:
        removed = tuned.reset(tuned.model_identity(model) if model else None)
        output.note(f"removed {removed} tuned setting{'s' * (removed != 1)}" + (f" of {model}" if model else ""))
        return
    if model is None:
        raise UsageError("specx tune needs a MODEL (or --show / --reset)", "e.g. specx tune ./target.gguf --drafter ngram")
    if repeats < 1:
        raise UsageError(f"--repeats must be at least 1 (got {repeats})", "try --repeats 2")
    tuned.check_writable()   # before an hour of measuring, not after
    measure_and_save(model, drafter, prompts, max_tokens, repeats, dtype, temperature, quant)


def measure_and_save(model, drafter, prompts, max_tokens, repeats, dtype, temperature, quant="auto") -> None:
    from ..bench import report, suite
    from ..bench.runner import Runner
    from ..bench.tune import candidates, choose, trials
    from ..errors import UsageError
    from ..options import check_machine, resolve
    from ..policy import tuned
    from .bench import auto_drafter
    from .progress import ProgressBar

    options = resolve({"model": model, "drafter": drafter, "dtype": dtype, "quant": quant, "max_tokens": max_tokens,
                       "temperature": temperature, "seed": 0 if temperature else None}, tuned=False)
    ref = auto_drafter(model, dtype) if drafter == "auto" else drafter
    if ref == "none":
        raise UsageError("there is nothing to tune without a drafter", "give --drafter ngram or a drafter model")
    ref = _absolute(ref)
    key = tuned.make_key(model, ref, dtype, temperature, check_machine(options.model))
    chosen = suite.load(prompts) if prompts else suite.calibration(suite.bundled())
    configs = candidates(ref)
    runner = Runner(options.model, configs, chosen, max_tokens=max_tokens, sampling=options.run.sampling,
                    notify=output.note)
    if tuned.split_hybrid(ref)[0] == "self":   # which layers it leaves out, before its k and policy are measured
        output.note(search_self(options.model, chosen, max_tokens))
    runner.load()
    output.note(f"tuning {len(runner.configs)} configurations (the baseline included) on {len(chosen)} prompts, "
                f"{repeats} repeats, {max_tokens} new tokens each")
    with ProgressBar("tune", len(runner.configs) * (repeats * len(chosen) + 1)) as advance:
        m = runner.run(repeats, True, advance)
    rows = report.summarise(m, greedy=temperature == 0)
    found = trials(rows, runner.configs)
    setting = choose(found, ref, complete=not m.interrupted)
    if setting is None:
        output.note("interrupted before any prompt was measured by every configuration: nothing saved")
        raise typer.Exit(130)
    show_trials(found)   # first: a save that fails (a full disk) must not lose what was measured
    tuned.record(key, setting, found, {"target": model, "drafter": ref})
    output.note(f"tuned: {setting.describe()}; saved in {tuned.path()}")
    if m.interrupted:
        output.note(f"interrupted: the setting comes from {len(m.complete_units())} finished comparisons")
        raise typer.Exit(130)


def search_self(m, prompts, max_tokens: int) -> str:
    """Search a self-draft's shape to a local optimum on the target's plain answer to the longest tuning
    prompt (teacher-forced, drafters/self.search_fully) and save it; the sentence that says what it found."""
    from dataclasses import replace

    from ..api import prepare, prompt_ids
    from ..drafters.self import search_fully
    from ..engine.draft import NoDrafter
    from ..engine.loop import Generation
    from ..engine.types import Round, Sampling

    pair = prepare(replace(m, drafter="self", k=4), output.note)
    drafter = getattr(pair.drafter, "model", pair.drafter)
    prompt = max(prompts, key=lambda p: len(p.text))
    seq = prompt_ids(pair.target.tokenizer, prompt.text, None, False)
    seq += [t for e in Generation(pair.target, NoDrafter(), seq, k=0, max_tokens=max_tokens, sampling=Sampling())
            if isinstance(e, Round) for t in e.token_ids]
    return search_fully(drafter, seq)


def show_trials(found: list[dict]) -> None:
    from rich.table import Table

    from ..bench.render import console

    table = Table(title="specx tune · overall medians, fastest first", title_justify="left")
    for name in ("config", "tok/s", "speedup", "speedup 90% lo", "accept"):
        table.add_column(name, justify="left" if name == "config" else "right")
    for t in found:
        table.add_row(t["label"], f"{t['tok_s']:.2f}", _x(t["speedup"]), _x(t["speedup_lo"]),
                      "–" if t["acceptance_rate"] is None else f"{t['acceptance_rate'] * 100:.0f}%")
    console(sys.stdout).print(table)


def _x(v) -> str:
    return "–" if v is None else f"{v:.2f}×"


def show_tuned() -> None:
    """Every stored setting: the models by name, the machine, the precision and what won."""
    from rich.table import Table

    from ..bench.render import console
    from ..policy import tuned

    entries = tuned.load_entries()
    if not entries:
        output.note(f"no tuned settings yet ({tuned.path()}); run `specx tune MODEL`")
        return
    table = Table(title=f"tuned settings · {tuned.path()}", title_justify="left")
    for name in ("target", "drafter", "device", "dtype", "mode", "setting"):
        table.add_column(name)
    for e in entries:
        k, names = e["key"], e.get("names") or {}
        setting = _described(e.get("setting"))
        table.add_row(str(names.get("target", k.get("target"))), str(names.get("drafter", k.get("drafter"))),
                      str(k.get("device")), f"{k.get('dtype')} {k.get('quant')}".replace(" none", ""),
                      str(k.get("mode")), setting)
    console(sys.stdout).print(table)


def _described(setting) -> str:
    from ..policy import tuned

    if not isinstance(setting, dict):
        return "–"
    try:
        return tuned.TunedSetting.from_dict(setting).describe()
    except (TypeError, ValueError) as e:
        return f"(unreadable: {e})"


def _absolute(ref: str) -> str:
    """A drafter given as a path, made absolute (MODEL+ngram keeps its suffix)."""
    from ..policy import tuned

    base, hybrid = tuned.split_hybrid(ref)
    if base not in tuned.SPECIAL and Path(base).expanduser().exists():
        base = str(Path(base).expanduser().resolve())
    return base + ("+ngram" if hybrid else "")
