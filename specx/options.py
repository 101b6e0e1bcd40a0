"""Options, resolved once: flags > SPECX_* environment > config file > tuned > preset > built-in.

`ModelOptions` says what to load (a model, its drafter, k, precisions, memory), `RunOptions` how to
answer one prompt (length, sampling, template, stops, draft policy). Both check their values when made
(state/limits.py; no torch), so an option error is said before anything loads, whichever way the
options came: `resolve` (the CLI: every layer, and where each value came from) or `from_keywords`
(the Python API: keywords over built-ins). `specx run`, `chat`, `bench`, `tune` and `plan` all build
their options through `resolve`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType

from .engine.types import Sampling
from .errors import UsageError
from .state import limits

EXPLICIT = ("flag", "environment", "config")   # sources a user set: they outrank a tuned value
CHOSEN = EXPLICIT + ("tuned",)                 # sources that choose k (else `auto` may draft past it)


@dataclass(frozen=True)
class ModelOptions:
    """What to load. `k` None: each policy's own default (api.Pair.draft_tokens), as `specx run` without -k."""

    model: str
    drafter: str = "auto"
    k: int | None = None
    dtype: str = "auto"
    quant: str = "auto"
    draft_dtype: str | None = None
    draft_quant: str = "auto"
    draft_vocab: int | None = None
    mem_budget: str | None = None
    allow_disk_offload: bool = False
    moe_offload: bool = False

    def __post_init__(self):
        limits.check("k", self.k)
        limits.check_name("dtype", self.dtype)
        if self.draft_dtype is not None:
            limits.check_name("dtype", self.draft_dtype)
        limits.check_name("quant", self.quant)
        limits.check_name("draft_quant", self.draft_quant)


@dataclass(frozen=True)
class RunOptions:
    """How one answer is made. `guard`: the draft policy is a tuned one that `auto` chose; it still turns
    speculation off where it does not pay, as `auto` does."""

    max_tokens: int = 512
    sampling: Sampling = field(default_factory=Sampling)
    system: str | None = None
    stop: tuple[str, ...] = ()
    raw: bool = False
    draft_policy: str = "auto"
    confidence: float = 0.4
    guard: bool = False
    tree: int = 0   # token trees: at most this many nodes a verify; 0 chains; -1 sized by measured costs
    # keep the prompt's first tokens that a loaded pair's caches hold from its previous answer (a shared system
    # prompt, a conversation so far) instead of reading them again; the same output either way
    reuse: bool = True

    def __post_init__(self):
        from .policy.policy import POLICIES

        if self.draft_policy not in POLICIES:
            raise UsageError(f"unknown draft policy {self.draft_policy!r}", f"use one of: {', '.join(POLICIES)}")
        s = self.sampling
        for name, value in (("confidence", self.confidence), ("max_tokens", self.max_tokens), ("tree", self.tree),
                            ("temperature", s.temperature), ("top_p", s.top_p), ("top_k", s.top_k)):
            limits.check(name, value)
        object.__setattr__(self, "stop", tuple(self.stop))
        if any(not x for x in self.stop):
            raise UsageError("a stop string is empty: it would never stop anything", "give --stop a non-empty string")


@dataclass(frozen=True)
class Options:
    """Both halves, where each value came from (`flag`, `environment`, `config`, `tuned`, `preset`,
    `built-in`, or `argument` in the Python API), what resolving them has to say, and the display settings."""

    model: ModelOptions
    run: RunOptions
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    notes: tuple[str, ...] = ()
    stats: bool = True
    color: str = "auto"


MODEL_FIELDS = tuple(f.name for f in fields(ModelOptions))
RUN_FIELDS = ("max_tokens", "temperature", "top_p", "top_k", "seed", "system", "stop", "raw", "draft_policy",
              "confidence", "guard", "tree", "reuse")
DISPLAY_FIELDS = ("stats", "color")


def build(values: Mapping[str, object]) -> tuple[ModelOptions, RunOptions]:
    """Flat values (option name → value) → the two checked halves; a missing name takes its built-in."""
    return ModelOptions(**{n: values[n] for n in MODEL_FIELDS if n in values}), build_run(values)


def build_run(values: Mapping[str, object]) -> RunOptions:
    sampling = Sampling(values.get("temperature", 0.0), values.get("top_k") or None, values.get("top_p"),
                        values.get("seed"))
    return RunOptions(sampling=sampling, **{n: values[n] for n in RUN_FIELDS
                                            if n in values and n not in ("temperature", "top_p", "top_k", "seed")})


def from_keywords(model: str, **keywords) -> Options:
    """The Python API's options: its keywords over the built-ins (no environment, config or tuned layer:
    a program says what it wants). An unknown keyword is a TypeError, as for any Python function."""
    unknown = sorted(set(keywords) - set(MODEL_FIELDS) - set(RUN_FIELDS))
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
    m, r = build({"model": model, **keywords})
    check_machine(m)
    return Options(m, r, MappingProxyType({n: "argument" if n in keywords else "built-in"
                                           for n in MODEL_FIELDS + RUN_FIELDS}))


def check_machine(m: ModelOptions) -> str:
    """Whether this machine has the CPU kernels asked for (imports torch); the target's weights `auto` means
    (a GGUF variant's name stands for itself: its weights are the file's)."""
    from .cpu.fastpath import choose

    if m.draft_quant not in limits.LEAN_QUANT + limits.DRAFT_LEAN_QUANT:
        choose(limits.runtime_quant(m.draft_quant), "drafter")
    if m.quant in limits.GPU_ONLY_QUANT + limits.LEAN_QUANT or limits.is_variant_name(m.quant):
        return m.quant
    return choose(m.quant, "target")


def resolve(given: Mapping[str, object], *, tuned: bool = True, environ: Mapping[str, str] | None = None,
            config_path=None) -> Options:
    """Every option from its highest layer: `given` (what the user typed: option name → value, only those
    typed) > SPECX_* > config file > tuned (`specx tune`, when `tuned`) > the model's preset > built-in.
    The values are checked before the tuned layer is read (that needs the model's identity); k is then
    what a run drafts at most (policy.draft_cap: `auto` may draft past an unchosen k)."""
    from . import presets
    from .policy.policy import draft_cap
    from .state import settings

    keys = {n: v for n, v in given.items() if n in settings.KEYS}
    layered = settings.resolve(keys, environ=environ, config_path=config_path, preset=presets.defaults)
    values = {**{n: v for n, (v, _) in layered.items()}, **given}
    sources = {**dict.fromkeys(MODEL_FIELDS + RUN_FIELDS, "built-in"), **{n: s for n, (_, s) in layered.items()},
               **{n: "flag" for n in given}}
    if not values.get("model"):
        raise UsageError("no model given", "name one (a GGUF file, a model folder or a preset such as smollm2), "
                                           "or set a default: `specx config set model smollm2`")
    target_weights = check_machine(build(values)[0])   # every value checked before anything is looked up
    notes: list[str] = []
    asked_auto = values["draft_policy"] == "auto"   # a tuned policy taken in its place runs guarded
    if tuned:
        found = tuned_layer(values, {n for n, s in sources.items() if s in EXPLICIT}, target_weights, notes.append)
        values.update(found)
        sources.update({n: "tuned" for n in found})
    values["k"] = draft_cap(values["k"], values["draft_policy"], sources["k"] in CHOSEN)
    values["guard"] = asked_auto and sources["draft_policy"] == "tuned"
    m, r = build(values)
    return Options(m, r, MappingProxyType(sources), tuple(notes), values["stats"], values["color"])


# ---- the tuned layer ---------------------------------------------------------------------------

FLAG = {"k": "-k", "draft_policy": "--draft-policy", "confidence": "--confidence", "tree": "--tree"}


def tuned_layer(values: Mapping[str, object], explicit: set[str], target_weights: str,
                notify: Callable[[str], None]) -> dict[str, object]:
    """What `specx tune` saved for this model, drafter (any, under `auto`), machine, dtype, weights and
    mode, for the options the user left unset (`explicit`: set by flag, SPECX_* or the config file);
    said in one line. A drafter or k=0 the user gave keeps speculation as asked."""
    from pathlib import Path

    from .policy import tuned

    drafter, k = values["drafter"], values["k"]
    if drafter == "none" or ("k" in explicit and k == 0) or not tuned.load_entries():
        return {}
    wanted = None if drafter == "auto" else drafter
    if wanted and wanted not in tuned.SPECIAL and Path(wanted).expanduser().exists():
        wanted = str(Path(wanted).expanduser().resolve())
    key = tuned.make_key(values["model"], wanted, values["dtype"], values["temperature"], target_weights)
    setting = tuned.lookup_tuned(key, notify)
    if setting is None or not _usable(setting.drafter):
        return {}
    if setting.off:
        if wanted is not None:
            notify(f"note: tuning found this drafter slower than plain decoding ({setting.describe()}); "
                   f"using it because --drafter was given")
            return {}
        notify(f"tuned: {setting.describe()}; --drafter or -k overrides it")
        return {"drafter": "none", "k": 0}
    found = {n: v for n, v in (("k", setting.k), ("draft_policy", setting.policy),
                               ("confidence", setting.confidence), ("tree", setting.tree)) if n not in explicit}
    if wanted is None:   # `auto` takes the tuned drafter
        found["drafter"] = setting.drafter
    overridden = [FLAG[n] for n in FLAG if n in explicit]
    kept = f"; {', '.join(overridden)} from the command line override{'s' * (len(overridden) == 1)} it" \
        if overridden else ""
    notify(f"tuned: {setting.describe()}{kept}")
    return found


def _usable(ref: str) -> bool:
    """A tuned drafter that is a path must still be there (presets and ngram always are)."""
    from pathlib import Path

    from .policy import tuned

    ref = tuned.split_hybrid(ref)[0]
    return ref in tuned.SPECIAL or "/" not in ref or Path(ref).exists()
