"""MemoryPlan: the frozen result of planning, its one-line summary, JSON, table, and load arguments."""
from __future__ import annotations

from dataclasses import dataclass

from .footprint import PROCESS_BYTES
from .probe import Budgets, fmt_bytes

DEVICES = ("cuda:0", "cpu", "disk")
BLOCKS_HELD = " blocks"   # ModelPlan.native's ending when specx's GPU block kernels hold the file's blocks


@dataclass(frozen=True)
class Placement:
    """One module group on one device, stored with one scheme."""

    group: str
    kind: str
    device: str
    scheme: str
    bytes: int
    kv_bytes: int = 0          # this group's share of the KV cache at the planned context
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelPlan:
    """Where one model's weights live, in which precision, and why."""

    role: str                  # target | drafter
    name: str
    dtype: str                 # compute dtype
    quant: str                 # none | int8 | nf4 | fp4 | a registered CPU backend name | int8dyn (drafters)
    placements: tuple[Placement, ...]
    context: int
    kv_bytes_per_token: int
    activation_bytes: int
    lossy: bool = False
    runtime_bytes: int = 0     # CPU memory beyond the tensors: tokenizer and objects, the fast path's packed copy
    native: str = ""           # the file's own format (e.g. "Q4_K/Q6_K") when specx's lean decoder runs it as it is;
                               # "Q4_K/Q6_K blocks" when its GPU block kernels do (gpu/blocks.py)

    def bytes_on(self, device: str) -> int:
        runtime = self.runtime_bytes if device == "cpu" else 0
        return runtime + sum(p.bytes + p.kv_bytes for p in self.placements if p.device == device)

    @property
    def weight_bytes(self) -> int:
        return sum(p.bytes for p in self.placements)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(d for d in DEVICES if any(p.device == d for p in self.placements))

    def device_map(self) -> dict[str, str]:
        """accelerate's device_map: module path → 'cuda:0' / 'cpu' / 'disk' (disjoint paths)."""
        return {part: p.device for p in self.placements for part in p.parts}

    @property
    def blocks(self) -> bool:
        """Whether specx's GPU block kernels run the file's blocks (gpu/blocks.py)."""
        return self.native.endswith(BLOCKS_HELD)

    def share(self) -> str:
        """'62% gpu / 38% cpu' by weight bytes, or 'gpu' when all on one device."""
        total = max(self.weight_bytes, 1)
        shares = [(d, sum(p.bytes for p in self.placements if p.device == d) / total) for d in self.devices]
        if len(shares) == 1:
            return _short(shares[0][0])
        return " / ".join(f"{round(100 * s)}% {_short(d)}" for d, s in shares)


def _short(device: str) -> str:
    return "gpu" if device.startswith("cuda") else device


@dataclass(frozen=True)
class MemoryPlan:
    """Everything `specx plan` prints and `specx run` applies."""

    target: ModelPlan
    drafter: ModelPlan | None
    k: int                     # requested draft length
    k_cap: int                 # the most the plan leaves room for
    context: int               # the most tokens target and drafter can hold
    drafter_context: int
    speculation_bytes: int     # logits for k+1 verified tokens, drafter logits, candidate KV
    headroom: tuple[tuple[str, int], ...]     # activation headroom per device
    budgets: Budgets
    reasons: tuple[str, ...]
    load_peak_bytes: int = 0   # estimate: steady state plus the largest group in flight while loading
    max_context: int = 0       # the most tokens this placement has room for (≤ the models' limit)
    expert_cache_bytes: int = 0  # GPU expert cache for MoE experts kept in CPU memory (inside the headroom)
    process_bytes: int = PROCESS_BYTES   # the specx process itself (Python, torch, transformers): resident
                                         # before any budget is read, so no budget pays for it

    def rss_bytes(self) -> int:
        """The process's planned peak resident memory: the plan's CPU bytes and the process itself."""
        return self.total_bytes().get("cpu", 0) + self.process_bytes

    def total_bytes(self) -> dict[str, int]:
        """Planned steady-state bytes per device (weights + KV + speculation + headroom) and overall."""
        out = {d: 0 for d in DEVICES}
        for m in (self.target, self.drafter):
            if m:
                for d in DEVICES:
                    out[d] += m.bytes_on(d)
        for d, n in self.headroom:
            out[d] += n
        out[self.spec_device] += self.speculation_bytes
        out = {d: n for d, n in out.items() if n}
        out["overall"] = sum(out.values())
        return out

    def steady_bytes(self) -> int:
        """Weights, KV cache at the planned context and speculation buffers: what stays allocated while
        generating (the activation headroom is transient and counted apart)."""
        return self.total_bytes()["overall"] - sum(n for _, n in self.headroom)

    @property
    def spec_device(self) -> str:
        m = self.drafter or self.target
        return m.devices[0] if m.devices else "cpu"

    def summary(self) -> str:
        """One line for run stats: 'target 62% gpu / 38% cpu, drafter gpu'."""
        quant = f" {self.target.native}" if self.target.native else "" if self.target.quant == "none" \
            else f" {self.target.quant}"
        text = f"target{quant} {self.target.share()}"
        if self.drafter:
            text += f", drafter{f' {self.drafter.native}' if self.drafter.native else ''} {self.drafter.share()}"
        return text + (f", k ≤ {self.k_cap}" if self.k_cap < self.k else "")

    def load_kwargs(self, role: str = "target") -> dict:
        """Keyword arguments for AutoModelForCausalLM.from_pretrained that apply this plan."""
        m = self.target if role == "target" else self.drafter
        kwargs: dict = {"dtype": m.dtype, "device_map": m.device_map()}
        if "disk" in m.devices:
            from .probe import offload_folder

            kwargs["offload_folder"] = str(offload_folder())
        if m.quant in ("int8", "nf4", "fp4"):
            kwargs["quantization_config"] = bnb_config(m.quant, m.dtype, offloaded="cpu" in m.devices)
        return kwargs

    def to_json(self) -> dict:
        def model(m: ModelPlan | None):
            if m is None:
                return None
            return {"name": m.name, "dtype": m.dtype, "quant": m.quant, "native": m.native or None, "lossy": m.lossy,
                    "context": m.context,
                    "kv_bytes_per_token": m.kv_bytes_per_token, "activation_bytes": m.activation_bytes,
                    "runtime_bytes": m.runtime_bytes,
                    "share": m.share(), "groups": [
                        {"group": p.group, "kind": p.kind, "device": p.device, "scheme": p.scheme,
                         "bytes": p.bytes, "kv_bytes": p.kv_bytes} for p in m.placements]}
        b = self.budgets
        return {"version": 1, "summary": self.summary(), "target": model(self.target),
                "drafter": model(self.drafter), "k": self.k, "k_cap": self.k_cap, "context": self.context,
                "drafter_context": self.drafter_context,
                "max_context": self.max_context, "expert_cache_bytes": self.expert_cache_bytes, "speculation_bytes": self.speculation_bytes,
                "headroom_bytes": dict(self.headroom), "steady_bytes": self.steady_bytes(), "load_peak_bytes": self.load_peak_bytes,
                "budgets": {"gpu": b.gpu, "cpu": b.cpu, "disk": b.disk, "source": b.source},
                "total_bytes": self.total_bytes(), "process_bytes": self.process_bytes, "rss_bytes": self.rss_bytes(),
                "reasons": list(self.reasons)}


def bnb_config(quant: str, dtype: str, offloaded: bool):
    """transformers' BitsAndBytesConfig for a plan (imported only when a plan quantizes)."""
    import torch
    from transformers import BitsAndBytesConfig

    if quant == "int8":
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_enable_fp32_cpu_offload=offloaded)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant, bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=getattr(torch, dtype),
                              llm_int8_enable_fp32_cpu_offload=offloaded)


def need_table(rows: list[tuple[str, int, int | None]]) -> str:
    """A need-versus-budget table for a refusal: (device, need, budget)."""
    lines = [f"{'device':<8}{'need':>12}{'budget':>12}"]
    lines += [f"{d:<8}{fmt_bytes(n):>12}{'none' if b is None else fmt_bytes(b):>12}" for d, n, b in rows]
    return "\n".join(lines)
