"""Which of a preset's files a run takes: its float checkpoint, or one of its GGUF variants ([quants.NAME]).

Rules (issue 35, item 4):
- A variant asked for by name (`NAME:Q8_0`, or `--quant Q8_0`) is taken, whatever its size; a name the preset
  does not list is a usage error that lists the ones it does.
- A preset's `default_quant` is taken as a bare name's file (the preset's author chose it).
- Without CUDA, with the weights left as the file holds them (`--quant` auto/none/q8, `--dtype` auto), a preset
  with variants takes one: Q4_K_M (issue 35's default), or the preset's smallest variant when it
  lists no Q4_K_M; when that does not fit the CPU budget, the largest smaller variant that does. specx's lean
  decoder runs it as the file holds it, instead of converting a (often gated) float checkpoint.
- With CUDA and the weights left as the file holds them, the float checkpoint while its bfloat16 copy fits the
  GPU budget (the dense CUDA decoder, measured on a GPU); else Q4_K_M (or the smallest variant) where its blocks
  fit (specx's GPU block kernels, on an Ampere or newer GPU with Triton), instead of bitsandbytes' conversion
  of the float checkpoint; else the float checkpoint, planned as before.
- With a dtype or runtime precision asked for (`--quant int8`, `--dtype float32`), the float checkpoint
  (a preset that lists GGUF files only still takes one of them).
A variant is priced before it is downloaded (`price`): the local file, else the preset's stated size, else the
Hub's listing, else its GGUF type over the preset's config when a pull left it in the cache (gguf_price.py),
else the type's base block size over the preset's parameter count; plus the runtime's own objects and, with the
config, the default context's KV cache. The memory plan prices the downloaded file exactly and refuses what
does not fit.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import presets
from ..errors import InsufficientResources, UsageError
from ..models.preset_source import lookup

PREFERRED = "Q4_K_M"


@dataclass(frozen=True)
class Ask:
    """What the run asked for that bears on the choice: the runtime precision (--quant / --draft-quant, which
    may name a variant), the dtype, and --mem-budget."""

    quant: str = "auto"
    dtype: str = "auto"
    mem_budget: str | None = None


@dataclass(frozen=True)
class Variant:
    name: str     # a key of preset.quants; "" = the float checkpoint
    why: str      # one clause for the memory sentence ("" for the float checkpoint)


FLOAT = Variant("", "")


def choose(preset: presets.Preset, suffix: str, ask: Ask, gpu: bool, cpu_budget: int,
           price: Callable[[str], int | None], gpu_budget: int | None = None,
           file_price: Callable[[str], int | None] | None = None) -> Variant:
    """The rules above. `suffix`: the `:NAME` of `preset:NAME`; `price(name)`: a variant's bytes in CPU memory
    (weights and what the run adds), None when unknown (taken as fitting). On a GPU that runs the block kernels:
    its budget, and `file_price(name)`, a variant's file bytes (None when unknown: the float checkpoint)."""
    from ..state.limits import is_variant_name

    asked = ask.quant if is_variant_name(ask.quant) else ""
    if suffix and asked and suffix.lower() != asked.lower():
        raise UsageError(f"two GGUF variants asked for: {preset.name}:{suffix} and --quant {asked}",
                         "give one of them")
    name = suffix or asked
    if name:
        return Variant(lookup(preset, name), f"{lookup(preset, name)} (the preset's GGUF asked for)")
    if preset.default_quant:
        return Variant(preset.default_quant, f"{preset.default_quant} (the preset's default GGUF)")
    checkpoint = bool(preset.target.repo or preset.mirrors)   # a preset of GGUF files only has nothing else
    if preset.quants and checkpoint and gpu and _as_file(ask) and gpu_budget is not None and file_price:
        return _blocks_on_gpu(preset, gpu_budget, file_price)
    if not preset.quants or checkpoint and (gpu or not _as_file(ask)):
        return FLOAT
    return _fitting(preset, cpu_budget, price)


GPU_ROOM = 1.15   # a GGUF's blocks on a GPU: its file's bytes, the K-quants' unpacked scales (+3%), KV and work room


def _blocks_on_gpu(preset: presets.Preset, budget: int, file_price: Callable[[str], int | None]) -> Variant:
    """The preferred variant where the float checkpoint's bfloat16 copy (its parameters estimated from the file:
    its bytes at its base type's bits) does not fit the GPU budget and the file's blocks do; else FLOAT."""
    from . import gguf_price
    from .probe import fmt_bytes

    first = _preferred(preset)
    size = file_price(first)
    if size is None or not gguf_price.known(first):
        return FLOAT
    dense = 2 * (preset.target.params or size * 8 / gguf_price.bits_per_weight(gguf_price.types_of(first)[0]))
    if dense <= budget or size * GPU_ROOM > budget:
        return FLOAT
    return Variant(first, f"{first} (the preset's GGUF, kept in its blocks on the GPU: the bfloat16 checkpoint "
                          f"needs about {fmt_bytes(int(dense))} of the GPU budget's {fmt_bytes(budget)})")


def _as_file(ask: Ask) -> bool:
    from .footprint import NATIVE_QUANTS

    return ask.dtype == "auto" and ask.quant in NATIVE_QUANTS


def _fitting(preset: presets.Preset, budget: int, price: Callable[[str], int | None]) -> Variant:
    from .probe import fmt_bytes

    order = sorted(preset.quants, key=nominal_bits)   # smallest type first; priced only when asked
    first = _preferred(preset)
    need = functools.cache(price)
    fits = lambda q: need(q) is None or need(q) <= budget  # noqa: E731
    if fits(first):
        return Variant(first, f"{first} (the preset's GGUF: no CUDA)")
    smaller = [q for q in order[:order.index(first)] if fits(q)]
    if smaller:
        q = smaller[-1]
        return Variant(q, f"{q} (the preset's largest GGUF that fits: no CUDA, and {first} needs about "
                          f"{fmt_bytes(need(first))} of the CPU budget's {fmt_bytes(budget)})")
    priced = ", ".join(f"{q} about {fmt_bytes(need(q))}" for q in order if need(q) is not None)
    raise InsufficientResources(f"no GGUF variant of {preset.name} fits the CPU budget of {fmt_bytes(budget)} "
                                f"({priced})", "raise --mem-budget, pick a smaller preset, or ask for a "
                                               "variant by name (--quant NAME)")


def _preferred(preset: presets.Preset) -> str:
    """Q4_K_M where the preset lists it, else its smallest variant."""
    return PREFERRED if PREFERRED in preset.quants else min(preset.quants, key=nominal_bits)


def nominal_bits(name: str) -> tuple[float, float]:
    """A variant's block types' bits per weight (base, more-bits), for ordering without any download;
    a name of no known type sorts last."""
    from . import gguf_price

    if not gguf_price.known(name):
        return (float("inf"), float("inf"))
    return tuple(gguf_price.bits_per_weight(t) for t in gguf_price.types_of(name))


# ---- on this machine -------------------------------------------------------------------------

def source_for(ref: str, ask: Ask = Ask()):
    """The resolved Source a run takes for `ref`: for a preset, the file `pick` chooses, saying why in
    Source.variant; anything else as models/resolve.py resolves it (a variant name in --quant: exit 2)."""
    from dataclasses import replace

    from ..models.resolve import preset_of, resolve
    from ..state.limits import is_variant_name

    preset, suffix = preset_of(ref)
    if preset is None:
        return resolve(ref, ask.quant if is_variant_name(ask.quant) else "")   # refused there with a hint
    chosen = pick(preset, suffix, ask)
    return replace(resolve(ref, chosen.name), variant=chosen.why)


def entry_for(name: str, notify=None):
    """The catalog entry of the file `specx run NAME` takes on this machine (`specx pull`, the auto drafter):
    for a bare preset name or preset file with GGUF variants, the one `pick` chooses (said through `notify`)."""
    from ..models import catalog
    from ..models.preset_source import hub_target

    entry = catalog.lookup(name)
    bare = presets.is_preset_file(Path(name).expanduser()) or not any(c in name for c in "/:")
    if entry.preset is None or not bare or not entry.preset.quants:
        return entry
    chosen = pick(entry.preset, "", Ask())
    if not chosen.name or chosen.name == entry.preset.default_quant:
        return entry
    if notify:
        notify(f"{entry.preset.name}: {chosen.why}")
    return catalog.Entry(f"{entry.preset.name}:{chosen.name}", entry.preset, *hub_target(entry.preset, chosen.name))


def pick(preset: presets.Preset, suffix: str, ask: Ask) -> Variant:
    """`choose` with this machine's budgets (--mem-budget simulates them) and `price`."""
    from ..state.limits import is_variant_name

    if not (preset.quants or suffix or is_variant_name(ask.quant)):
        return FLOAT
    from .probe import detect, parse_mem_budget

    override = parse_mem_budget(ask.mem_budget) if ask.mem_budget else None
    budgets = detect(override)
    listed = functools.cache(_listed)   # one Hub call per repo and choice
    blocks = budgets.gpu is not None and (bool(override and "gpu" in override) or _runs_blocks())
    return choose(preset, suffix, ask, budgets.gpu is not None, budgets.cpu, lambda q: price(preset, q, listed),
                  budgets.gpu if blocks else None, lambda q: file_bytes(preset, q, _cached_config(preset), listed))


def _runs_blocks() -> bool:
    """Whether this machine's GPU runs specx's block kernels (gpu/qmatmul.available)."""
    from ..gpu.qmatmul import available

    return not available(0)


def price(preset: presets.Preset, name: str, listed=None) -> int | None:
    """CPU bytes a variant needs: its file, the runtime's own objects, and the KV cache of the default context
    when the preset's config is at hand; None when nothing prices it."""
    from .footprint import runtime_overhead

    config = _cached_config(preset)
    weights = file_bytes(preset, name, config, listed or _listed)
    return None if weights is None else weights + runtime_overhead(_vocab(config)) + _kv_bytes(config)


def file_bytes(preset: presets.Preset, name: str, config=None, listed=None) -> int | None:
    """A variant's file size: the local copy, the preset's stated size, the Hub's listing, the config priced
    by the variant's type (gguf_price.estimate), or its type's base bits over the preset's parameters."""
    from . import gguf_price
    from ..models import hub

    q = preset.quants[name]
    local = hub.cached(hub.HubRef(q.repo, q.file))
    if local is not None:
        return local.stat().st_size
    size = q.size or (listed or _listed)(q.repo).get(q.file)
    if size:
        return size
    if not gguf_price.known(name):
        return None
    if config is not None:
        return sum(gguf_price.estimate(config, name)[0].values())
    base = gguf_price.types_of(name)[0]
    return int(preset.target.params * gguf_price.bits_per_weight(base) / 8) or None


def _listed(repo: str) -> dict[str, int]:
    """File sizes of a Hub repo (one model-info call; none offline or when the Hub does not answer)."""
    from ..errors import SpecxError
    from ..models import hub

    if hub.offline():
        return {}
    try:
        return {f.name: f.size for f in hub.remote_files(hub.HubRef(repo), repo)[2] if f.size}
    except SpecxError:
        return {}


def _cached_config(preset: presets.Preset):
    """The preset's float checkpoint's config when a past pull left it in the Hub cache (no network)."""
    from huggingface_hub import try_to_load_from_cache

    if not preset.target.repo:
        return None
    path = try_to_load_from_cache(preset.target.repo, "config.json")
    if not isinstance(path, str):
        return None
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(Path(path).parent, trust_remote_code=False)
    except (OSError, ValueError):
        return None


def _vocab(config) -> int:
    """The config's vocabulary size, 0 when no config is at hand (then the runtime's base alone is priced)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return int(getattr(text, "vocab_size", 0) or 0)


def _kv_bytes(config) -> int:
    """float32 keys and values of the planner's default context (memory/planner.py DEFAULT_CONTEXT)."""
    from .planner import DEFAULT_CONTEXT

    if config is None:
        return 0
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    context = min(DEFAULT_CONTEXT, int(getattr(text, "max_position_embeddings", None) or DEFAULT_CONTEXT))
    return text.num_hidden_layers * kv_heads * head_dim * 2 * 4 * context
