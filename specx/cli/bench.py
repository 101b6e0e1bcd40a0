"""`specx bench [MODEL]`: the prompt suite against the baseline; tables, JSON, CSV, plots, comparisons."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, output

EXAMPLES = """\b
Examples:
  specx bench smollm2
  specx bench ./target.gguf --drafter ./drafter.gguf --drafter ngram -k 2 -k 4 --repeats 5
  specx bench ./target.gguf -c tuned -c drafter=ngram,k=8,policy=auto --quant fp16
  specx bench ./target.gguf --drafter ./drafter.gguf --peer hf --json result.json --csv result.csv
  specx bench smollm2 --prompts my-prompts.toml --json - | jq '.rows[] | select(.category=="overall")'
  specx bench --compare before.json after.json
"""


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def bench(
    model: Annotated[str, typer.Argument(help="Target: a GGUF file, a Hugging Face model folder, or a preset name.")] = "smollm2",
    drafter: Annotated[Optional[list[str]], typer.Option("--drafter", "-d", help="auto, ngram, or a model; repeat to compare several (the baseline `none` is always included).")] = None,
    draft_policy: Annotated[Optional[list[str]], typer.Option("--draft-policy", help="fixed, heuristic, confidence, auto (cost-model k, 0 when drafting does not pay); repeatable.")] = None,
    draft_tokens: Annotated[Optional[list[int]], typer.Option("--draft-tokens", "-k", help="Tokens drafted per round; repeatable (default 4; 16 for --draft-policy auto, its most).")] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="Threshold for --draft-policy confidence.")] = 0.4,
    config: Annotated[Optional[list[str]], typer.Option("--config", "-c", metavar="SPEC", help="One exact configuration, `drafter=D,k=K,policy=P[,confidence=C]`, or `tuned` (what `specx tune` saved for this model, run as `specx run` runs it: guarded, labelled `(tuned)`); repeatable, added to the --drafter × --draft-policy × -k grid.")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="New tokens per prompt.")] = 128,
    repeats: Annotated[int, typer.Option("--repeats", "-r", help="Measured runs of every prompt and configuration.")] = 5,
    warmup: Annotated[bool, typer.Option("--warmup/--no-warmup", help="One short unmeasured run of every configuration first.")] = True,
    prompts: Annotated[Optional[str], typer.Option("--prompts", help="Your own prompts (TOML [[prompt]] tables or JSON; see docs/bench.md).")] = None,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto = float32 on CPU).")] = "auto",
    quant: Annotated[str, typer.Option("--quant", help="Target weights on CPU for every row: auto (= none), none, fp16, int8, int4.")] = "auto",
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="0 = greedy; > 0 samples (outputs are then not compared).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed for sampling.")] = 0,
    peer: Annotated[Optional[list[str]], typer.Option("--peer", help="Add transformers' rows: `hf` (assisted generation and prompt lookup on specx's loaded weights and kernels: the algorithm alone differs), `hf-assisted` or `hf-lookup` alone; `hf-stock` (plain generate, assisted generation and prompt lookup as transformers loads the models itself), `hf-stock-generate`, `hf-stock-assisted` or `hf-stock-lookup` alone. Repeatable.")] = None,
    json_path: Annotated[Optional[str], typer.Option("--json", metavar="PATH", help="Write the result as JSON to PATH (`-` = stdout; the table then goes to stderr).")] = None,
    csv_path: Annotated[Optional[str], typer.Option("--csv", metavar="PATH", help="Write the rows as CSV to PATH (`-` = stdout).")] = None,
    plot_path: Annotated[Optional[str], typer.Option("--plot", metavar="FILE.png", help="Speedup per category and acceptance by draft position (needs matplotlib: specx[bench]).")] = None,
    compare: Annotated[Optional[tuple[str, str]], typer.Option("--compare", metavar="A.json B.json", help="Show the difference between two saved results (nothing is run).")] = None,
) -> None:
    """Benchmark speculative configurations against plain decoding on a bundled prompt suite."""
    if compare:
        return show_compare(*compare, json_path)
    from ..bench import suite
    from ..bench.runner import Runner

    settings, configs, chosen = plan(model, drafter, draft_policy, draft_tokens, confidence, max_tokens, repeats,
                                     prompts, dtype, temperature, seed, peer, plot_path, json_path, csv_path, quant,
                                     config)
    from ..engine.types import Sampling

    runner = Runner(model, configs, chosen, dtype=dtype, max_tokens=max_tokens, quant=quant,
                    sampling=Sampling(temperature, None, None, seed if temperature else None), notify=output.note)
    runner.load()
    total = len(runner.configs) * (repeats * len(chosen) + (1 if warmup else 0))
    with ProgressBar("bench", total) as advance:
        m = runner.run(repeats, warmup, advance)
    finish(m, settings, model, json_path, csv_path, plot_path, suite)
    if m.interrupted:
        raise typer.Exit(130)


def plan(model, drafters, policies, ks, confidence, max_tokens, repeats, prompts, dtype, temperature, seed,
         peers, plot_path, json_out=None, csv_out=None, quant="auto", specs=None):
    """Every check that needs no model, then the configurations: drafters × policies × k, plus peers."""
    from ..bench import suite
    from ..bench.peers import peer_configs
    from ..bench.runner import Config, with_baseline
    from ..api import MAX_K, check_options
    from ..errors import UsageError
    from ..models.resolve import dtype_name
    from ..engine.types import Sampling

    from ..policy.policy import draft_cap

    policies, ks = policies or ["fixed"], ks or []
    for policy in policies:
        check_options(max_tokens, Sampling(temperature), policy, confidence, quant)
    if repeats < 1:
        raise UsageError(f"--repeats must be at least 1 (got {repeats})", "try --repeats 5")
    for k in ks:
        if not 1 <= k <= MAX_K:
            raise UsageError(f"-k must be between 1 and {MAX_K} in a benchmark (got {k})",
                             "the baseline (--drafter none) is always measured")
    if plot_path:
        from ..bench.plot import check_available

        check_available(plot_path)
    for dest in (json_out, csv_out, plot_path):
        if dest not in (None, "-") and not Path(dest).expanduser().parent.is_dir():
            raise UsageError(f"the folder of {dest} does not exist", "create it first, or write somewhere else")
    chosen = suite.load(prompts)
    exact = [parse_spec(s, model, dtype, temperature, quant) for s in specs or []]
    names = [resolve_auto(model) if d == "auto" else d for d in (drafters or ([] if exact else ["auto"]))]
    configs = with_baseline([Config(d, k, p, confidence) for d in names if d != "none" for p in policies
                             for k in ks or [draft_cap(4, p, False)]]
                            + exact)
    configs += peer_configs(peers or [], configs)
    from ..cpu.fastpath import choose

    settings = {"model": model, "dtype": dtype_name(dtype), "quant": choose(quant, "target"), "max_tokens": max_tokens, "repeats": repeats,
                "mode": "greedy" if temperature == 0 else f"sampling t={temperature:g} seed={seed}",
                "prompts": prompts or "bundled", "level": 0.9, "tok_s": "end to end (prefill included)"}
    if specs and "tuned" in [x.strip() for x in specs]:
        settings["tuned"] = exact[[x.strip() for x in specs].index("tuned")].label
    return settings, configs, chosen


def parse_spec(spec: str, model: str, dtype: str, temperature: float, quant: str):
    """`drafter=D,k=K,policy=P[,confidence=C]` or `tuned` → a Config (checked like the flags)."""
    from ..bench.runner import Config
    from ..api import MAX_K, check_options
    from ..errors import UsageError
    from ..policy.policy import draft_cap
    from ..engine.types import Sampling

    hint = "e.g. --config drafter=ngram,k=8,policy=auto or --config tuned"
    if spec.strip() == "tuned":
        return tuned_config(model, dtype, temperature, quant)
    fields = {}
    for part in filter(None, spec.split(",")):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in ("drafter", "k", "policy", "confidence"):
            raise UsageError(f"cannot read --config {spec!r} at {part!r}", hint)
        fields[key.strip()] = value.strip()
    if "drafter" not in fields:
        raise UsageError(f"--config {spec!r} names no drafter", hint)
    try:
        policy = fields.get("policy", "fixed")
        k = int(fields["k"]) if "k" in fields else draft_cap(4, policy, False)
        conf = float(fields.get("confidence", 0.4))
    except ValueError:
        raise UsageError(f"--config {spec!r}: k must be an integer and confidence a number", hint) from None
    check_options(1, Sampling(temperature), policy, conf)
    if not 1 <= k <= MAX_K:
        raise UsageError(f"--config {spec!r}: k must be between 1 and {MAX_K}", hint)
    drafter = resolve_auto(model) if fields["drafter"] == "auto" else fields["drafter"]
    return Config(drafter, k, policy, conf)


def tuned_config(model: str, dtype: str, temperature: float, quant: str):
    from ..bench.runner import BASELINE, Config
    from ..policy import tuned
    from ..errors import UsageError
    from ..cpu.fastpath import choose

    setting = tuned.lookup_tuned(tuned.make_key(model, None, dtype, temperature, choose(quant, "target")))
    if setting is None:
        raise UsageError(f"no tuned setting for {model} with these --dtype/--quant/--temperature",
                         f"run `specx tune {model}` first (with the same options)")
    output.note(f"tuned: {setting.describe()}")
    return BASELINE if setting.off else Config(setting.drafter, setting.k, setting.policy, setting.confidence,
                                               tuned=True)


def resolve_auto(model: str) -> str:
    """`auto`, as `specx run` reads it: the preset's model drafter, else ngram."""
    from ..models.resolve import resolve

    source = resolve(model)
    drafters = source.preset.drafters if source.preset else ()
    return next((d for d in drafters if d != "ngram"), "ngram")


def finish(m, settings, model, json_path, csv_path, plot_path, suite) -> None:
    """Summarise, save under the data dir, then the table, JSON, CSV and plot where asked."""
    import json

    from ..bench import render, report, store
    from ..errors import SpecxError

    rows = report.summarise(m, greedy=settings["mode"] == "greedy", level=settings["level"])
    if not rows:
        output.note("no configuration finished a prompt: nothing to report")
        return
    doc = report.document(m, rows, settings, store.environment())
    try:
        saved = f"saved {store.save(doc, model)}"
    except SpecxError as e:   # the measurements still reach the table and the files asked for
        saved = f"warning: the result was not saved: {e.message}"
    to_stdout = "-" in (json_path, csv_path)
    con = render.console(sys.stderr if to_stdout else sys.stdout)
    con.print(render.bench_table(doc))
    for line in render.precision_lines(doc) + ([f"interrupted: {doc['complete_units']} complete measurements kept"]
                                               if m.interrupted else []):
        con.print(line)
    output.note(saved)
    for dest, text in ((json_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n"),
                       (csv_path, report.csv_text(rows))):
        if dest == "-":
            output.write_stdout(text)
        elif dest:
            store.write(dest, text)
            output.note(f"wrote {dest}")
    if plot_path:
        from ..bench.plot import plot

        output.note(f"wrote {plot(doc, plot_path)}")


def show_compare(a: str, b: str, json_path: str | None) -> None:
    import json

    from ..bench import render, report, store

    diff = report.compare(store.load(a), store.load(b))
    if json_path == "-":
        output.write_stdout(json.dumps(diff, indent=1, ensure_ascii=False) + "\n")
        return
    if json_path:
        store.write(json_path, json.dumps(diff, indent=1, ensure_ascii=False) + "\n")
    con = render.console(sys.stdout)
    con.print(render.compare_table(diff))
    for line in render.diff_lines(diff):
        con.print(line)


class ProgressBar:
    """A Rich progress bar on stderr (transient on a terminal, absent when stderr is not one)."""

    def __init__(self, what: str, total: int):
        self.what, self.total, self.bar, self.done = what, total, None, 0

    def __enter__(self):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from . import live

        if live.wants_live(sys.stderr):
            self.bar = Progress(TextColumn(f"{self.what} {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                                TimeRemainingColumn(), console=live.stderr_console(), transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("", total=self.total)
        return self.advance

    def advance(self, label: str, sample) -> None:
        self.done += 1
        if self.bar:
            self.bar.update(self.task, advance=1, description=label)
        elif sample is not None:   # not a terminal: one line per measured run
            output.note(f"{self.what} {self.done}/{self.total} {label} · {sample.category}/{sample.prompt} · "
                        f"{sample.new_tokens} tokens · {sample.tok_s:.2f} tok/s")

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)
        return False
