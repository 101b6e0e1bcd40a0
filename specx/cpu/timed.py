"""Choices between ways of running a linear layer whose speed depends on the machine: timed once per
machine, saved as JSON in the kernel cache, and said in one sentence.

Each option is timed on one 8960x1536 float32 layer (a 1.5B model's MLP: 55 MB, more than a CPU's
last-level cache), or on the Workload the caller names, at 1 and 5 rows (decoding one
token, verifying four drafts) unless the caller names the rows, alternating so drift cancels; the sizes'
medians are summed. The first
option is the incumbent: another replaces it only when 3% faster. A saved choice holds for the machine
it was timed on (processor, vector unit, threads, torch: state/machine.py); another machine sharing the
cache folder times it again. An environment variable may decide.
"""
from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

SHAPE = (8960, 1536)
ROWS = (1, 5)
REPS = 7          # alternating rounds per size after a warm-up round
MARGIN = 0.97     # a challenger must take at most 97% of the incumbent's time

Run = Callable[[torch.Tensor], torch.Tensor]          # x (rows, 1536) -> y (rows, 8960)
Make = Callable[[object], Run]                        # the workload's weights -> a run over them (or its own copy)


@dataclass(frozen=True)
class Workload:
    """What every option is timed on: its words, and its weights, built once and given to each option's Make."""

    words: str
    weights: Callable[[], object]


def float_layer() -> torch.Tensor:
    """One SHAPE float32 layer of seeded random values."""
    return torch.randn(*SHAPE, generator=torch.Generator().manual_seed(0))


LAYER = Workload(f"one {SHAPE[0]}x{SHAPE[1]} layer", float_layer)   # the default: float32 kernels' choices


@dataclass(frozen=True)
class Choice:
    what: str                       # in words: "L2 prefetching", "fp16 kernel"
    pick: str                       # the option taken
    ms: dict[str, float] = field(default_factory=dict)   # each option's time (the two sizes' medians, summed)
    machine: str = ""
    source: str = "timed"           # "timed" now, "saved" by an earlier process, or the environment variable's name
    workload: str = LAYER.words     # what each option ran, in words
    rows: tuple[int, ...] = ROWS    # the calls' rows it was timed at

    def short(self) -> str:
        """The choice in a few words ("weight prefetching off, timed on this machine")."""
        return f"{self.what} {self.pick}, " + ("timed on this machine" if self.source in ("timed", "saved")
                                               else f"by {self.source}")

    def sentence(self) -> str:
        """One human sentence on the choice."""
        if self.source not in ("timed", "saved"):
            return f"{self.what} {self.pick} ({self.source})"
        when = "timed on this machine" if self.source == "timed" else "as timed on this machine before"
        times = ", ".join(f"{name} {ms:.1f} ms" for name, ms in self.ms.items())
        rows = f"{'+'.join(map(str, self.rows))} row{'s' if self.rows != (1,) else ''}"
        return f"{self.what} {self.pick}, {when} ({self.workload} at {rows}: {times})"


def machine() -> str:
    """The machine as tuned settings and measured costs name it (processor, vector unit PyTorch uses,
    threads), and the torch version (fbgemm comes with it)."""
    from ..state.machine import identity

    return f"{identity('cpu')}, torch {torch.__version__}"


def choose(what: str, saved_at: Path, options: dict[str, Make], forced: tuple[str, str] | None = None,
           workload: Workload = LAYER, rows: tuple[int, ...] = ROWS) -> Choice:
    """`forced` (option, variable name): the environment decided. Else the choice saved for this machine,
    else time the options on `workload` at `rows` (the first option is the incumbent) and save the result (a
    read-only cache: skipped)."""
    if forced is not None:
        return Choice(what, forced[0], source=forced[1], workload=workload.words, rows=rows)
    here = machine()
    try:
        saved = json.loads(saved_at.read_text(encoding="utf-8"))
        if saved.get("machine") == here and saved.get("pick") in options:
            return Choice(what, saved["pick"], {k: float(v) for k, v in saved["ms"].items()}, here, "saved",
                          workload.words, rows)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    choice = time_options(what, options, here, workload, rows)
    try:
        from ..state.atomicio import atomic_write

        atomic_write(saved_at, json.dumps({"pick": choice.pick, "ms": choice.ms, "machine": here}))
    except OSError:
        pass
    return choice


def time_options(what: str, options: dict[str, Make], here: str = "", workload: Workload = LAYER,
                 rows: tuple[int, ...] = ROWS) -> Choice:
    """Time every option on the same weights and inputs at each size of `rows`, rotating their order each round."""
    generator = torch.Generator().manual_seed(1)   # the inputs' (float_layer draws from seed 0)
    weights = workload.weights()
    runs = {name: make(weights) for name, make in options.items()}
    names = list(runs)
    totals = dict.fromkeys(names, 0.0)
    for m in rows:
        x = torch.randn(m, SHAPE[1], generator=generator)
        times: dict[str, list[float]] = {name: [] for name in names}
        for rep in range(REPS + 1):
            for i in range(len(names)):
                name = names[(i + rep) % len(names)]
                start = time.perf_counter()
                runs[name](x)
                if rep:   # the first round warms up
                    times[name].append(time.perf_counter() - start)
        for name in names:
            totals[name] += statistics.median(times[name]) * 1e3
    incumbent = names[0]
    best = min(names, key=totals.__getitem__)
    pick = best if totals[best] < MARGIN * totals[incumbent] else incumbent
    return Choice(what, pick, {name: round(ms, 2) for name, ms in totals.items()}, here, workload=workload.words,
                  rows=rows)
