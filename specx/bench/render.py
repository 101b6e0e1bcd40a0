"""Rich tables for bench results and comparisons; plain text when piped or NO_COLOR."""
from __future__ import annotations

from .report import OVERALL


def console(stream):
    """A Rich console on this stream, following specx's colour policy; wide enough when piped."""
    from rich.console import Console

    from ..terminal import is_tty, wants_color

    tty = is_tty(stream)
    return Console(file=stream, no_color=not wants_color(stream), force_terminal=wants_color(stream) or None,
                   width=None if tty else 200, highlight=False, soft_wrap=False)


def _iv(iv: dict | None, fmt: str = "{:.2f}", suffix: str = "") -> str:
    if not iv:
        return "–"
    return f"{fmt.format(iv['median'])}{suffix} [{fmt.format(iv['lo'])}–{fmt.format(iv['hi'])}]"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.0f}%"


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n else "–"


def bench_table(doc: dict):
    """Rows grouped by category (overall last): medians with their bootstrap intervals."""
    from rich.table import Table

    s = doc["settings"]
    title = (f"specx bench · {s['model']} · {s['mode']} · {s['max_tokens']} new tokens · "
             f"{s['repeats']} repeats · medians [{s['level'] * 100:.0f}% bootstrap interval]")
    table = Table(title=title, title_justify="left")
    for name, justify in [("category", "left"), ("config", "left"), ("tok/s", "right"), ("speedup", "right"),
                          ("accept", "right"), ("mean len", "right"), ("TTFT s", "right"),
                          ("draft/verify s", "right"), ("peak RSS", "right"), ("= baseline", "right")]:
        table.add_column(name, justify=justify, no_wrap=name != "config")
    last = None
    for r in doc["rows"]:
        if last is not None and r["category"] != last:
            table.add_section()
        last = r["category"]
        same = "–" if r["outputs_compared"] is None else f"{r['outputs_matched']}/{r['outputs_compared']}"
        table.add_row(r["category"], r["config"], _iv(r["tok_s"], "{:.1f}"), _iv(r["speedup"], suffix="×"),
                      _pct(r["acceptance_rate"]),
                      "–" if r["mean_acceptance_length"] is None else f"{r['mean_acceptance_length']:.2f}",
                      _iv(r["ttft_s"]), f"{r['draft_s']:.2f}/{r['verify_s']:.2f}", _mib(r["peak_bytes"]), same,
                      style="bold" if r["category"] == OVERALL else None)
    return table


def precision_lines(doc: dict) -> list[str]:
    """One line per configuration: the precision of its rows (the table's footnote)."""
    return [f"precision of {c['label']}: {c['precision']}" for c in doc["configs"]]


def compare_table(diff: dict):
    from rich.table import Table

    table = Table(title=f"specx bench --compare · A = {diff['a']} · B = {diff['b']}", title_justify="left")
    for name in ("category", "config", "tok/s A", "tok/s B", "change", "speedup A", "speedup B",
                 "accept A", "accept B"):
        table.add_column(name, justify="left" if name in ("category", "config") else "right")
    for r in diff["rows"]:
        change = "–" if r["change"] is None else f"{r['change'] * 100:+.1f}%"
        table.add_row(r["category"], r["config"], f"{r['tok_s_a']:.2f}", f"{r['tok_s_b']:.2f}", change,
                      _x(r["speedup_a"]), _x(r["speedup_b"]), _pct(r["acceptance_a"]), _pct(r["acceptance_b"]))
    return table


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}×"


def diff_lines(diff: dict) -> list[str]:
    """What else differs between A and B: settings and environment leaves, rows only in A."""
    lines = [f"{what} {d['key']}: {d['a']} → {d['b']}" for what in ("settings", "environment")
             for d in diff[what]]
    lines += [f"only in A: {row}" for row in diff["only_a"]]
    return lines or ["same settings and environment"]
