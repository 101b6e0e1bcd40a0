"""The lean decoder's layer loop in one C call (layers.c): the calls decoder/model.py's Python loop makes, in
its order, on the same kernels (quant.c, attention.c), so the logits are the same bits either way. What it
saves is the Python and ctypes work between the calls: seven a layer, several microseconds each, which is a
sizeable share of a small model's step. It runs where both kernel libraries are built (else the Python loop
runs the references); `use(False)` turns it off (tests hold the two together)."""
from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Sequence
from pathlib import Path

import torch

from . import build, kernels

SOURCE = Path(__file__).with_name("layers.c")
OPTIONS = ("-O2", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC")   # adds biases as IEEE additions
_state: dict[str, object] = {"on": True}
P = ctypes.c_void_p


class Kernels(ctypes.Structure):
    _fields_ = [("matmul", P), ("attention", P), ("residual_norm", P), ("glu", P)]


class Group(ctypes.Structure):
    _fields_ = [("nseg", ctypes.c_int32), ("types", P), ("data", P), ("rows", P), ("n", ctypes.c_int64)]


class LayerWeights(ctypes.Structure):
    _fields_ = [("qkv", Group), ("o", Group), ("gate_up", Group), ("down", Group), ("qkv_bias", P), ("o_bias", P),
                ("post_attn_norm", P), ("ffn_norm", P), ("post_ffn_norm", P), ("attn_width", ctypes.c_int64)]


class Scratch(ctypes.Structure):
    _fields_ = [("qkv", P), ("attn", P), ("out", P), ("gu", P), ("act", P)]


def use(on: bool | None = None) -> bool:
    """Whether forwards run their layers in the C loop (where it is built); None changes nothing. Returns the
    previous setting."""
    was = bool(_state["on"])
    if on is not None:
        _state["on"] = bool(on)
    return was


def _ptr(t: torch.Tensor | None):
    return None if t is None else t.data_ptr()


def _library():
    """The compiled loop, or None where a kernel library or the compiler is missing (the Python loop runs)."""
    if "lib" not in _state:
        kernels.ahead()
        _state["lib"] = None
        compiler = build.c_compiler()
        if _libraries() is not None and compiler:
            try:
                lib, _ = build.library("layers", SOURCE, compiler, OPTIONS)
            except (OSError, subprocess.SubprocessError):
                return None
            lib.spx_layers.restype = ctypes.c_int
            _state["lib"] = lib
    return _state["lib"]


def first_build(compiler: str) -> build.Spec:
    """The build this machine loads (kernels.ahead compiles it beside the others on a first run)."""
    return build.Spec("layers", SOURCE, compiler, OPTIONS)


def _libraries():
    """The kernel libraries the Python loop would call now: (quant.c's, attention.c's), or None."""
    from . import attention, quant

    matmul = quant._library() if quant.available() else None
    attn = attention._library()
    return None if matmul is None or attn is None else (matmul.lib, attn)


def _kernels(libs) -> Kernels:
    """The kernels' addresses in the libraries in use now (a benchmark may swap in another build)."""
    key = tuple(id(lib) for lib in libs)
    if _state.get("kernels_of") != key:
        address = lambda f: ctypes.cast(f, P).value   # noqa: E731
        quant, attn = libs
        _state["kernels"] = Kernels(address(quant.spx_matmul), address(attn.spx_attention),
                                    address(attn.spx_residual_norm), address(attn.spx_glu))
        _state["kernels_of"] = key
    return _state["kernels"]


def describe() -> str:
    """How a forward runs its layers, in a few words (the kernels line)."""
    if active():
        return "layer loop in C"
    return "layer loop in Python (" + ("turned off" if not _state["on"] else "layers.c not built") + ")"


def active() -> bool:
    """Whether the next forward runs its layers here."""
    return bool(_state["on"]) and _library() is not None and _libraries() is not None


class Plan:
    """One decoder's layers as layers.c reads them: built once per decoder (its weights do not move); the
    ctypes arrays the structures point into are kept here."""

    def __init__(self, weights, config):
        from .quant_call import arrays

        self.weights = weights   # the plan holds pointers into these: a decoder given other weights needs another
        self.eps, self.act = config.rms_norm_eps, config.hidden_act
        self._keep: list = []
        self.layers = []
        for lw in weights.layers:
            groups = []
            for ws, cols in ((lw.qkv, config.hidden_size), (lw.o, None), (lw.gate_up, config.hidden_size),
                             (lw.down, None)):
                x = torch.empty(0, cols if cols is not None else ws[0].cols)
                (types, data, rows), n = arrays(ws, x, None)
                self._keep.append((types, data, rows))
                groups.append(Group(len(ws), ctypes.cast(types, P), ctypes.cast(data, P), ctypes.cast(rows, P), n))
            self.layers.append(LayerWeights(*groups, _ptr(lw.qkv_bias), _ptr(lw.o_bias), _ptr(lw.post_attn_norm),
                                            _ptr(lw.ffn_norm), _ptr(lw.post_ffn_norm), lw.o[0].cols))
        # floats a row of each buffer holds: the projections' outputs share one (qkv is read by the attention
        # before the output projection writes there), so a prompt pass holds what the Python loop's held
        self.widths = (max(max(g.qkv.n, g.o.n, g.down.n) for g in self.layers),   # qkv, then o's and down's outputs
                       max(g.attn_width for g in self.layers),                     # the attention's output
                       max(g.gate_up.n for g in self.layers),                      # gate | up
                       max(g.gate_up.n // 2 for g in self.layers))                 # the activation
        self._orders: dict[tuple[int, ...], tuple] = {}

    def order(self, active: tuple[int, ...], norms: Sequence[torch.Tensor]):
        """The layer and next-norm pointer arrays for a set of active layers (kept per set: a self-draft
        alternates a few)."""
        if active not in self._orders:
            layer_ptrs = (P * len(active))(*(ctypes.addressof(self.layers[i]) for i in active))
            next_norms = (P * len(active))(*(n.data_ptr() for n in norms[1:]))
            self._orders[active] = (layer_ptrs, next_norms, tuple(norms))
        return self._orders[active]

    def run(self, cache_addresses: Sequence[int], active: tuple[int, ...], norms: Sequence[torch.Tensor],
            x: torch.Tensor, h: torch.Tensor, start: int, positions: torch.Tensor, mask: torch.Tensor | None,
            mode: str) -> None:
        """The layers `active` over the rows of x (the residual stream, updated in place) and h (RMSNorm(x) by
        norms[0]; on return, by norms[-1]): what model.py's Python loop computes, in one call."""
        from . import quant
        from .attention import ACTS

        mode_id = quant._default().mode_id(mode)   # ValueError for a mode it has not (before any C runs)
        lib, kernels = _library(), _kernels(_libraries())
        layer_ptrs, next_norms, _ = self.order(active, norms)
        attn = (P * len(active))(*(cache_addresses[i] for i in active))
        rows = x.shape[0]
        buffer = torch.empty(rows * sum(self.widths))   # one allocation for the (T × width) buffers
        qkv, heads, gu, act = (buffer.data_ptr() + 4 * rows * sum(self.widths[:i]) for i in range(4))
        scratch = Scratch(qkv, heads, qkv, gu, act)
        past = 0 if mask is None else mask.shape[1] - rows
        if (mask is not None and (mask.dim() != 2 or mask.shape[0] != rows or not 0 <= past <= start)) or \
                positions.dim() != 1 or positions.shape[0] != past + rows or positions.dtype != torch.int64:
            shape = None if mask is None else tuple(mask.shape)
            raise ValueError(f"a mask {shape} with {positions.shape[0]} positions does not fit {rows} rows after "
                             f"{start} cached slots")
        mask = None if mask is None else mask.to(torch.uint8).contiguous()
        positions = positions.contiguous()
        status = lib.spx_layers(
            ctypes.byref(kernels), layer_ptrs, attn, next_norms, len(active), P(x.data_ptr()), P(h.data_ptr()),
            ctypes.c_int64(rows), ctypes.c_int64(x.shape[1]), ctypes.c_int64(start), P(positions.data_ptr()),
            ctypes.c_int64(past), None if mask is None else P(mask.data_ptr()), ctypes.c_int32(mode_id),
            ctypes.c_float(self.eps), ctypes.c_int32(ACTS[self.act]), ctypes.byref(scratch),
            ctypes.c_int32(torch.get_num_threads()))
        if status:
            layer, what = active[status // 16 - 1], status % 16
            if what in (1, 3):
                raise MemoryError(f"layer {layer}: a kernel's buffers could not be allocated")
            raise ValueError(f"layer {layer}: " + ("a weight type without a kernel" if what == 2 else
                                                   "slots or positions outside the cache or rotary tables"))
