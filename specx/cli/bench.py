"""`specx bench [MODEL]`: the prompt suite against the baseline; tables, JSON, CSV, plots, comparisons."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, output
from .progress import ProgressBar

EXAMPLES = """\b
Examples:
  specx bench smollm2
  specx bench smollm2 --full
  specx bench ./target.gguf --drafter ./drafter.gguf --drafter ngram -k 2 -k 4 --repeats 5
  specx bench ./target.gguf --drafter ./drafter.gguf+ngram --tree 0 --tree 8 --tree -1
  specx bench ./target.gguf -c tuned -c drafter=ngram,k=8,policy=auto --quant fp16
  specx bench ./target.gguf --drafter ./drafter.gguf --peer hf --json result.json --csv result.csv
  specx bench smollm2 --prompts my-prompts.toml --json - | jq '.rows[] | select(.category=="overall")'
  specx bench --compare before.json after.json
"""


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def bench(
    model: Annotated[str, typer.Argument(help="Target: a GGUF file, a Hugging Face model folder, or a preset name.")] = "smollm2",
    drafter: Annotated[Optional[list[str]], typer.Option("--drafter", "-d", help="auto, ngram, self (the target drafts with some of its own layers), or a model; repeat to compare several (the baseline `none` is always included).")] = None,
    draft_policy: Annotated[Optional[list[str]], typer.Option("--draft-policy", help="fixed, heuristic, confidence, auto (cost-model k, 0 when drafting does not pay); repeatable (default: as `specx run`, auto).")] = None,
    draft_tokens: Annotated[Optional[list[int]], typer.Option("--draft-tokens", "-k", help="Tokens drafted per round; repeatable (default: as `specx run` takes it: 16 for auto, its most; 4 for the others).")] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="Threshold for --draft-policy confidence.")] = 0.4,
    tree: Annotated[Optional[list[int]], typer.Option("--tree", help="Token trees: 0 chains, -1 sized by measured costs, N at most N nodes a verify; repeatable, a grid axis (default: as `specx run`).")] = None,
    config: Annotated[Optional[list[str]], typer.Option("--config", "-c", metavar="SPEC", help="One exact configuration, `drafter=D,k=K,policy=P[,confidence=C][,tree=N]`, or `tuned` (what `specx tune` saved for this model, run as `specx run` runs it: guarded, labelled `(tuned)`); repeatable, added to the --drafter × --draft-policy × -k × --tree grid.")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="New tokens per prompt.")] = 128,
    repeats: Annotated[Optional[int], typer.Option("--repeats", "-r", help=f"Measured runs of every prompt and configuration (default {QUICK_REPEATS}; {FULL_REPEATS} with --full).")] = None,
    full: Annotated[bool, typer.Option("--full", help="The whole bundled suite (4 prompts per category) instead of the quick look (the first prompt of each).")] = False,
    warmup: Annotated[bool, typer.Option("--warmup/--no-warmup", help="One short unmeasured run of every configuration first.")] = True,
    prompts: Annotated[Optional[str], typer.Option("--prompts", help="Your own prompts (TOML [[prompt]] tables or JSON; see docs/bench.md).")] = None,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto = float32 on CPU).")] = "auto",
    quant: Annotated[str, typer.Option("--quant", help="Target weights on CPU for every row: auto (a GGUF file as it is, int8 activations; else none), none, q8, fp16, int8, int4.")] = "auto",
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="0 = greedy; > 0 samples (outputs are then not compared).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed for sampling.")] = 0,
    peer: Annotated[Optional[list[str]], typer.Option("--peer", help="Add transformers' rows: `hf` (assisted generation and prompt lookup on specx's loaded weights and kernels: the algorithm alone differs), `hf-assisted` or `hf-lookup` alone; `hf-stock` (plain generate, assisted generation and prompt lookup as transformers loads the models itself), `hf-stock-generate`, `hf-stock-assisted` or `hf-stock-lookup` alone. Repeatable.")] = None,
    json_path: Annotated[Optional[str], typer.Option("--json", metavar="PATH", help="Write the result as JSON to PATH (`-` = stdout; the table then goes to stderr).")] = None,
    csv_path: Annotated[Optional[str], typer.Option("--csv", metavar="PATH", help="Write the rows as CSV to PATH (`-` = stdout).")] = None,
    plot_path: Annotated[Optional[str], typer.Option("--plot", metavar="FILE.png", help="Speedup per category and acceptance by draft position (needs matplotlib: specx[bench]).")] = None,
    compare: Annotated[Optional[tuple[str, str]], typer.Option("--compare", metavar="A.json B.json", help="Show the difference between two saved results (nothing is run).")] = None,
) -> None:
    """Measure what `specx run` does (or the configurations named) against plain decoding on the bundled prompts."""
    if compare:
        return show_compare(*compare, json_path)
    from ..bench import suite
    from ..bench.runner import Runner

    repeats = repeats if repeats is not None else FULL_REPEATS if full else QUICK_REPEATS
    settings, configs, chosen, base, run = plan(
        model, drafter, draft_policy, draft_tokens, confidence, max_tokens, repeats, prompts, dtype, temperature,
        seed, peer, plot_path, json_path, csv_path, quant, config, full, tree)
    runner = Runner(base, configs, chosen, max_tokens=run.max_tokens, sampling=run.sampling, notify=output.note)
    runner.load()
    total = len(runner.configs) * (repeats * len(chosen) + (1 if warmup else 0))
    output.note(f"bench: {len(runner.configs)} configurations × {len(chosen)} prompts × {repeats} repeats, "
                f"{max_tokens} new tokens each" + ("" if full or prompts else "; --full for the whole suite"))
    with ProgressBar("bench", total) as advance:
        m = runner.run(repeats, warmup, advance)
    finish(m, settings, model, json_path, csv_path, plot_path, suite)
    if m.interrupted:
        raise typer.Exit(130)


QUICK_REPEATS, FULL_REPEATS = 2, 5   # a quick look: one prompt per category, paired twice


def plan(model, drafters, policies, ks, confidence, max_tokens, repeats, prompts, dtype, temperature, seed,
         peers, plot_path, json_out=None, csv_out=None, quant="auto", specs=None, full=False, trees=None):
    """Every check that needs no model, then the configurations: drafters × policies × k × trees (by
    default the ones `specx run` takes), plus exact ones and peers; the options the rows share."""
    from ..bench import suite
    from ..bench.peers import peer_configs
    from ..bench.runner import Config, with_baseline
    from ..errors import UsageError
    from ..models.resolve import dtype_name
    from ..options import resolve
    from ..state.limits import MAX_K, check

    shared = {"model": model, "dtype": dtype, "quant": quant, "temperature": temperature, "max_tokens": max_tokens,
              "seed": seed if temperature else None}
    base = resolve(shared, tuned=False)
    k_for = {p: resolve({**shared, "draft_policy": p, "confidence": confidence}, tuned=False).model.k
             for p in policies or ["auto"]}   # -k as `specx run` takes it with that policy (checked)
    if repeats < 1:
        raise UsageError(f"--repeats must be at least 1 (got {repeats})", "try --repeats 5")
    for t in trees or []:
        check("tree", t, "--tree")
    for k in ks or []:
        if not 1 <= k <= MAX_K:
            raise UsageError(f"-k must be between 1 and {MAX_K} in a benchmark (got {k})",
                             "the baseline (--drafter none) is always measured")
    if plot_path:
        from ..bench.plot import check_available

        check_available(plot_path)
    for dest in (json_out, csv_out, plot_path):
        if dest not in (None, "-") and not Path(dest).expanduser().parent.is_dir():
            raise UsageError(f"the folder of {dest} does not exist", "create it first, or write somewhere else")
    chosen = suite.load(prompts) if prompts or full else suite.calibration(suite.bundled())
    exact = [parse_spec(s, shared) for s in specs or []]
    if drafters or policies or ks or trees or exact:
        names = [auto_drafter(model, dtype) if d == "auto" else d for d in (drafters or ([] if exact else ["auto"]))]
        grid = [Config(d, k, p, confidence, tree=t) for d in names if d != "none" for p in k_for
                for k in ks or [k_for[p]] for t in trees or [base.run.tree]]
    else:
        grid = [run_config(resolve(shared), dtype)]
    configs = with_baseline(grid + exact)
    configs += peer_configs(peers or [], configs)
    from ..cpu.fastpath import choose

    settings = {"model": model, "dtype": dtype_name(dtype), "quant": choose(quant, "target"), "max_tokens": max_tokens, "repeats": repeats,
                "mode": "greedy" if temperature == 0 else f"sampling t={temperature:g} seed={seed}",
                "prompts": prompts or ("bundled" if full else "bundled, first of each category"), "level": 0.9,
                "tok_s": "end to end (prefill included)"}
    if specs and "tuned" in [x.strip() for x in specs]:
        settings["tuned"] = exact[[x.strip() for x in specs].index("tuned")].label
    return settings, configs, chosen, base.model, base.run


def run_config(options, dtype: str):
    """The row `specx run MODEL` would run: its drafter (`auto` picked as it picks), k and policy, a tuned
    one included (then guarded and labelled `(tuned)`, as `--config tuned`)."""
    from ..bench.runner import BASELINE, Config

    m, r = options.model, options.run
    if m.drafter == "none" or m.k == 0:
        return BASELINE
    drafter = auto_drafter(m.model, dtype) if m.drafter == "auto" else m.drafter
    return Config(drafter, m.k, r.draft_policy, r.confidence, tuned=options.sources["draft_policy"] == "tuned",
                  tree=r.tree)


def parse_spec(spec: str, shared: dict):
    """`drafter=D,k=K,policy=P[,confidence=C][,tree=N]` or `tuned` → a Config (checked like the flags; k by
    default as `specx run` takes it with that policy)."""
    from ..bench.runner import Config
    from ..errors import UsageError
    from ..options import resolve
    from ..state.limits import MAX_K, check

    hint = "e.g. --config drafter=ngram,k=8,policy=auto or --config tuned"
    if spec.strip() == "tuned":
        return tuned_config(shared)
    fields = {}
    for part in filter(None, spec.split(",")):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in ("drafter", "k", "policy", "confidence", "tree"):
            raise UsageError(f"cannot read --config {spec!r} at {part!r}", hint)
        fields[key.strip()] = value.strip()
    if "drafter" not in fields:
        raise UsageError(f"--config {spec!r} names no drafter", hint)
    try:
        policy, conf = fields.get("policy", "fixed"), float(fields.get("confidence", 0.4))
        given = int(fields["k"]) if "k" in fields else None
        tree = int(fields.get("tree", 0))
    except ValueError:
        raise UsageError(f"--config {spec!r}: k and tree must be integers and confidence a number", hint) from None
    k = resolve({**shared, "draft_policy": policy, "confidence": conf}, tuned=False).model.k if given is None else given
    if not 1 <= k <= MAX_K:
        raise UsageError(f"--config {spec!r}: k must be between 1 and {MAX_K}", hint)
    check("tree", tree, "--config tree")
    drafter = auto_drafter(shared["model"], shared["dtype"]) if fields["drafter"] == "auto" else fields["drafter"]
    return Config(drafter, k, policy, conf, tree=tree)


def tuned_config(shared: dict):
    """`--config tuned`: what `specx tune` saved for this model (any drafter), guarded as `specx run` runs it."""
    from ..bench.runner import BASELINE, Config
    from ..errors import UsageError
    from ..options import ModelOptions, check_machine
    from ..policy import tuned

    weights = check_machine(ModelOptions(shared["model"], quant=shared["quant"]))
    setting = tuned.lookup_tuned(tuned.make_key(shared["model"], None, shared["dtype"], shared["temperature"], weights))
    if setting is None:
        raise UsageError(f"no tuned setting for {shared['model']} with these --dtype/--quant/--temperature",
                         f"run `specx tune {shared['model']}` first (with the same options)")
    output.note(f"tuned: {setting.describe()}")
    return BASELINE if setting.off else Config(setting.drafter, setting.k, setting.policy, setting.confidence,
                                               tuned=True, tree=setting.tree)


def auto_drafter(model: str, dtype: str) -> str:
    """`auto` as `specx run` picks it (drafters/auto.py): a model drafter that also copies from the
    context (`MODEL+ngram`), else the target drafting for itself and copying (`self+ngram`) where it runs
    on specx's decoder (the target is loaded to know: memoised, the runs reuse it), else ngram."""
    from ..api import drafts_itself, prepare
    from ..drafters.auto import pick
    from ..models.resolve import dtype_name, resolve
    from ..options import ModelOptions
    from ..policy.tuned import HYBRID

    choice, _ = pick(resolve(model), dtype_name(dtype))
    if choice != "ngram":
        return choice + HYBRID
    return "self" + HYBRID if drafts_itself(prepare(ModelOptions(model, "none", dtype=dtype)).target) else "ngram"


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
