"""`--drafter auto`: the best downloaded drafter among a preset's candidates and its tokenizer family.

Rules: downloaded candidates, and (when the Hub is reachable and HF_HUB_OFFLINE is unset) candidates
that can be downloaded — for those only config and tokenizer are fetched to decide, and the weights
come only if one is chosen; the tokenizer must match the target's (checked before any weights load); prefer drafters of at most a quarter of the target's
parameters, accept up to half when nothing smaller is compatible; among those, the largest whose weights
fit in available memory next to the target's; otherwise the n-gram drafter. The returned sentence says why.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from .. import presets
from ..errors import IncompatibleDrafter, SpecxError

TIERS = ((4.0, "at most ¼ of the target"), (2.0, "at most ½ of the target, nothing smaller is compatible"))
BYTES_PER_PARAM = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class Considered:
    name: str
    params: int = 0
    why_not: str = ""          # empty: usable
    remote: bool = False       # usable once downloaded (only config and tokenizer are here so far)


def candidates(target) -> list[str]:
    """The preset's ordered model drafters, then downloaded presets of the same tokenizer family."""
    from ..models import catalog

    preset = target.preset or _preset_of(target.name)
    if preset is None:
        return []
    names = [d for d in preset.drafters if d != "ngram"]
    if preset.family:
        for name, other in sorted(presets.all_presets().items()):
            if other.family == preset.family and name != preset.name and name not in names:
                try:
                    if catalog.is_local(catalog.lookup(name)):
                        names.append(name)
                except SpecxError:
                    continue
    return names


def _preset_of(name: str):
    from ..models import catalog, hub

    ref = hub.parse_ref(name)
    return catalog._preset_for_repo(ref.repo) if ref else None


def available_memory() -> int:
    """Bytes the system can give now (MemAvailable), or 0 when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 0


def source_params(source) -> int:
    from ..models.store import count_params

    try:
        return count_params(source.path, source.kind)
    except (OSError, ValueError, KeyError):
        return 0


def consider(name: str, target, target_tokenizer) -> Considered:
    """One candidate: downloaded? same tokenizer? how many parameters? (no weights are loaded; no tokenizer
    built where both files hold one tokenizer; `target_tokenizer()`: the target's tokenizer and eos ids)"""
    from ..memory.variant import entry_for, source_for
    from ..models import catalog
    from ..models.resolve import eos_ids, load_tokenizer, same_tokenizer
    from .compat import check_drafter

    try:
        entry = entry_for(name)   # the file a run takes (a drafter preset's GGUF without CUDA)
        if not catalog.is_local(entry):
            return remote(name, entry, *target_tokenizer())
        source = source_for(name)
        if not same_tokenizer(target, source):
            tok = load_tokenizer(source)
            target_tok, target_eos = target_tokenizer()
            check_drafter(target_tok, tok, target_eos, eos_ids(source, tok))
    except IncompatibleDrafter:
        return Considered(name, why_not="different tokenizer")
    except SpecxError as e:
        return Considered(name, why_not=e.message)
    return Considered(name, catalog.params(entry) or source_params(source))


def remote(name: str, entry, target_tok, target_eos) -> Considered:
    """A candidate not downloaded yet: its config and tokenizer from the Hub decide (no weights)."""
    import json

    from transformers import AutoTokenizer

    from ..models import hub
    from .compat import check_drafter
    from ..models.resolve import Source, eos_ids

    if entry.ref is None or entry.ref.quant or hub.offline():
        return Considered(name, why_not="not downloaded")
    commit, _, files = hub.remote_files(entry.ref, name)
    kind, needed = hub.choose(entry.ref, files)
    folder = hub.fetch_small(entry.ref, name, commit, [f for f in needed if f.name in hub.TOKENIZER_FILES])
    try:
        tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except (ValueError, OSError) as e:
        return Considered(name, why_not=f"unreadable tokenizer: {e}")
    check_drafter(target_tok, tok, target_eos, eos_ids(Source("hf", folder, name), tok))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    per = BYTES_PER_PARAM.get(config.get("torch_dtype") or config.get("dtype") or "bfloat16", 2)
    weights = sum(f.size for f in needed if f.name.endswith(".safetensors"))
    return Considered(name, weights // per, remote=True)


def pick(target, dtype: str = "float32", memory: int | None = None) -> tuple[str, str]:
    """(drafter reference or "ngram", the sentence that explains the choice)."""
    names = candidates(target)
    if not names:
        return "ngram", f"{target.name} names no model drafter"
    from ..models.resolve import eos_ids, load_tokenizer

    @functools.cache
    def target_tokenizer():   # built only where a candidate needs comparing
        tok = load_tokenizer(target)
        return tok, eos_ids(target, tok)

    seen = [consider(n, target, target_tokenizer) for n in names]
    target_params = source_params(target)
    per = BYTES_PER_PARAM.get(dtype, 4)
    memory = available_memory() if memory is None else memory
    skipped = [f"{c.name} ({c.why_not})" for c in seen if c.why_not]
    usable = [c for c in seen if not c.why_not and c.params]
    fits = [c for c in usable if not memory or (c.params + target_params) * per <= memory]
    skipped += [f"{c.name} (does not fit in memory)" for c in usable if c not in fits]
    for factor, words in TIERS:
        tier = [c for c in fits if target_params >= factor * c.params]
        if tier:
            best = max(tier, key=lambda c: c.params)
            rest = f"; skipped {', '.join(skipped)}" if skipped else ""
            fetch = ", not downloaded yet: fetching it now" if best.remote else ""
            return best.name, f"auto: {words}, fits in memory{fetch}{rest}"
    skipped += [f"{c.name} (too large: {target_params / c.params:.1f}× smaller only)"
                for c in fits]
    hint = next((f"; `specx pull {c.name}` would add a drafter" for c in seen if c.why_not == "not downloaded"), "")
    return "ngram", f"no usable model drafter: {', '.join(skipped)}{hint}"
