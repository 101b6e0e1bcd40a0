"""`specx export vllm`: the `vllm serve` command that runs the same model with the same speculation,
for when one machine is not enough. Clients move unchanged: the same OpenAI API, the same model id
(`--served-model-name`), host and port.

The speculation is written in vLLM's documented `--speculative-config` JSON: a draft model as
{"method": "draft_model", "model": …, "num_speculative_tokens": k}, prompt lookup as
{"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": …, "prompt_lookup_min": …}
(sources: DOCS). vLLM runs the Hub's weights, so a preset maps to its Hub repo, a GGUF variant too."""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

DOCS = {"draft_model": "https://docs.vllm.ai/en/latest/features/speculative_decoding/draft_model/",
        "ngram": "https://docs.vllm.ai/en/latest/features/speculative_decoding/n_gram/",
        None: "https://docs.vllm.ai/en/latest/cli/serve/"}
# specx's prompt lookup (drafters/ngram.py) matches the longest suffix of up to max_n tokens, down to one
NGRAM_MIN = 1


@dataclass(frozen=True)
class Export:
    argv: list[str]
    config: dict | None              # the --speculative-config object, None: plain decoding
    notes: list[str] = field(default_factory=list)

    @property
    def docs(self) -> str:
        return DOCS[self.config and self.config["method"]]

    def text(self) -> str:
        """What `specx export vllm` prints: notes and the source as comments, then the command."""
        lines = [f"# {n}" for n in self.notes] + [f"# follows {self.docs}", shlex.join(self.argv)]
        return "\n".join(lines) + "\n"


def speculative_config(drafter: str | None, k: int, ngram_max: int) -> dict | None:
    """vLLM's --speculative-config: `drafter` is "ngram", a vLLM model name or path, or None (no drafting)."""
    if drafter is None or k <= 0:
        return None
    if drafter == "ngram":
        return {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": ngram_max,
                "prompt_lookup_min": NGRAM_MIN}
    return {"method": "draft_model", "model": drafter, "num_speculative_tokens": k}


def command(target: str, served_name: str, host: str, port: int, config: dict | None,
            dtype: str = "auto", extra: list[str] | None = None) -> list[str]:
    argv = ["vllm", "serve", target, "--served-model-name", served_name, "--host", host, "--port", str(port)]
    if dtype != "auto":
        argv += ["--dtype", dtype]
    argv += extra or []
    if config is not None:
        argv += ["--speculative-config", json.dumps(config)]
    return argv


def vllm_model(ref: str) -> tuple[str, list[str], list[str]]:
    """(what vLLM loads for a specx model reference, its extra flags, notes); no network, no weights.
    A preset → its Hub repo (and pinned revision); a Hub ref → the repo; a folder → its path; a GGUF
    file → its path (vLLM's GGUF loading wants the original repo's tokenizer: a note says so)."""
    from ..models import hub
    from ..models.resolve import preset_of

    path = Path(ref).expanduser()
    preset, quant = preset_of(ref)
    if preset is not None and preset.target.repo:
        notes = [f"{ref} runs {preset.target.repo}'s own weights in vLLM, not the {quant} GGUF"] if quant else []
        rev = ["--revision", preset.target.revision] if preset.target.revision else []
        return preset.target.repo, rev, notes
    if preset is not None:
        return ref, [], [f"the preset {preset.name} names no Hub repo ({preset.description}): put the Hub repo "
                         f"of those weights in place of {ref}"]
    if path.exists():
        if path.suffix == ".gguf":
            return str(path.resolve()), [], ["vLLM loads a GGUF file experimentally: add --tokenizer ORG/NAME "
                                             "(the repo the file was converted from)"]
        return str(path.resolve()), [], []
    parsed = hub.parse_ref(ref)
    if parsed is not None:
        return parsed.repo, ["--revision", parsed.revision] if parsed.revision else [], []
    return ref, [], []


def export(model: str, drafter: str, k: int, host: str, port: int, dtype: str = "auto") -> Export:
    """The command for `specx run MODEL --drafter DRAFTER -k K` (drafter as options resolved it: auto
    becomes the preset's first model drafter, else prompt lookup, as `specx plan` reads it)."""
    from ..drafters.ngram import MAX_N
    from ..models.resolve import preset_of
    from ..policy.tuned import split_hybrid

    target, extra, notes = vllm_model(model)
    name, hybrid = split_hybrid(drafter)
    if drafter == "auto":
        preset = preset_of(model)[0]
        name = next((d for d in (preset.drafters if preset else ()) if d != "ngram"), "ngram")
        hybrid = name != "ngram"
    if hybrid:
        notes.append("vLLM drafts with the model alone: specx also copies from the context (MODEL+ngram)")
    draft = None if name == "none" else "ngram" if name == "ngram" else vllm_model(name)[0]
    config = speculative_config(draft, k, MAX_N)
    return Export(command(target, model, host, port, config, dtype, extra), config, notes)
