"""The lean decoder's row-exact kernels (attention.c): attention over a KV cache with q/k norms and rotary in
front of it, RMSNorm after a residual add, the gated MLP activation. A row's result never depends on the other
rows of the call or on the thread count, which is what makes verifying k tokens in one forward give the bits
decoding them one by one gives. Each kernel has a PyTorch reference in attention_ref.py (the same math in
float32, not row-exact), used by the tests and when no C compiler is available."""
from __future__ import annotations

import ctypes
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import torch

from . import build, kernels
from .attention_ref import reference_attention, reference_glu, reference_residual_norm, reference_rmsnorm

SOURCE = Path(__file__).with_name("attention.c")
COMMON = ("-O3", "-fopenmp", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC")
# Same bits from every build (attention.c): the flags only let GCC use wider vectors.
# The AVX2 build takes FMA too: every CPU torch calls AVX2-capable has it (ATen's check asks for both).
BUILDS = {"avx512": ("-mavx512f", "-mavx512vl", "-mfma", "-mprefer-vector-width=512"), "avx2": ("-mavx2", "-mfma"),
          "portable": ()}
ACTS = {"silu": 0, "gelu_tanh": 1}
KEY_BLOCK = 16   # attention.c keeps keys in blocks of 16 slots, transposed: (kv_heads, capacity/16, head_dim, 16)
_state: dict[str, object] = {}


class Layer(ctypes.Structure):
    """attention.c's spx_attn: one layer's cache, rotary tables, norms and attention shape."""

    _fields_ = [("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("cos", ctypes.c_void_p), ("sin", ctypes.c_void_p),
                ("q_norm", ctypes.c_void_p), ("k_norm", ctypes.c_void_p), ("capacity", ctypes.c_int64),
                ("heads", ctypes.c_int64), ("kv_heads", ctypes.c_int64), ("head_dim", ctypes.c_int64),
                ("table_rows", ctypes.c_int64), ("window", ctypes.c_int64), ("eps", ctypes.c_float),
                ("scale", ctypes.c_float), ("adjacent", ctypes.c_int32)]


@dataclass
class Attention:
    """What one layer's attention reads: its keys (kv_heads, capacity/KEY_BLOCK, head_dim, KEY_BLOCK) and values
    (kv_heads, capacity, head_dim) (cache_tensors), the rotary tables (positions, head_dim/2), optional per-head
    RMSNorm weights of q and k, and its shape."""

    k: torch.Tensor
    v: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    q_norm: torch.Tensor | None
    k_norm: torch.Tensor | None
    heads: int
    eps: float
    scale: float
    window: int = 0            # > 0: a query at position p sees keys at positions > p - window
    adjacent: bool = False     # rotate pairs (2i, 2i+1) instead of (i, i + head_dim/2)

    def __post_init__(self):
        kv_heads, capacity, dim = self.v.shape
        if (self.heads % kv_heads or dim % 2 or self.cos.shape != (self.cos.shape[0], dim // 2)
                or self.k.shape != (kv_heads, capacity // KEY_BLOCK, dim, KEY_BLOCK)):
            raise ValueError("attention shapes do not fit together")
        ptr = lambda t: None if t is None else t.data_ptr()   # noqa: E731
        self.struct = Layer(ptr(self.k), ptr(self.v), ptr(self.cos), ptr(self.sin), ptr(self.q_norm),
                            ptr(self.k_norm), capacity, self.heads, kv_heads, dim, self.cos.shape[0], self.window,
                            self.eps, self.scale, int(self.adjacent))
        self.address = ctypes.addressof(self.struct)


def cache_tensors(kv_heads: int, capacity: int, head_dim: int, layers: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty keys and values for `layers` layers in attention.c's layout (capacity a multiple of KEY_BLOCK)."""
    if capacity % KEY_BLOCK:
        raise ValueError(f"a cache holds a multiple of {KEY_BLOCK} slots")
    return (torch.empty(layers, kv_heads, capacity // KEY_BLOCK, head_dim, KEY_BLOCK),
            torch.empty(layers, kv_heads, capacity, head_dim))


def keys(layer: "Attention") -> torch.Tensor:
    """A (kv_heads, capacity, head_dim) view of a layer's blocked keys (not contiguous)."""
    kv_heads, blocks, dim, _ = layer.k.shape
    return layer.k.permute(0, 1, 3, 2).reshape(kv_heads, blocks * KEY_BLOCK, dim)


def available() -> bool:
    """Whether the compiled kernels run here (built on first use)."""
    return _library() is not None


def why_not() -> str:
    _library()
    return str(_state.get("why", ""))


def describe() -> str:
    """Which build runs, in a few words."""
    return f"specx attention ({_state['build']})" if available() else f"PyTorch attention ({why_not()})"


def attention(layer: Attention, qkv: torch.Tensor, start: int, positions: torch.Tensor,
              mask: torch.Tensor | None = None) -> torch.Tensor:
    """Rows of qkv (T, (heads + 2·kv_heads)·head_dim) at cache slots start.. and rotary `positions` (T,) int64:
    their keys and values go into the cache, their attention comes out (T, heads·head_dim). `mask` (T, T) bool:
    which of this call's earlier rows each row sees (default: all; itself always), a token tree whose rows may
    share positions. Slots 0..start-1 of the cache hold positions 0..start-1, except where the mask is
    (T, past + T): then it covers the last `past` cached slots too (a tree grown over several calls, its earlier
    nodes cached), which hold the first `past` of `positions` (past + T,); each row sees exactly those it names."""
    rows = qkv.shape[0]
    past = 0 if mask is None else mask.shape[1] - rows
    if mask is not None and (mask.shape[0] != rows or not 0 <= past <= start or positions.shape[0] != past + rows):
        raise ValueError(f"a mask {tuple(mask.shape)} with {positions.shape[0]} positions does not fit {rows} rows "
                         f"after {start} cached slots")
    lib = _library()
    if lib is None:
        return reference_attention(layer, qkv, start, positions, mask)
    out = torch.empty(rows, layer.heads * layer.v.shape[2])
    if mask is not None:   # kept referenced until the call returns
        mask = mask.to(torch.uint8).contiguous()
    positions = positions.contiguous()
    status = lib.spx_attention(layer.address, qkv.data_ptr(), rows, start, positions.data_ptr(), past,
                               None if mask is None else mask.data_ptr(), out.data_ptr(), torch.get_num_threads())
    if status:
        raise (MemoryError("attention buffers could not be allocated") if status == 1
               else ValueError(f"slots {start}..{start + rows} or positions outside the cache or rotary tables"))
    return out


def share_rows(on: bool | None = None) -> bool:
    """Whether a plain causal call of several rows reads each key and value once for all of them (attend_rows;
    the default) rather than once per row: the same bits either way. None changes nothing. Returns the
    previous setting."""
    lib = _library()
    return bool(lib.spx_set_attention_share(-1 if on is None else int(on))) if lib else False


def passes(tile_bytes: int | None = None, value_vectors: int | None = None) -> tuple[int, int]:
    """How attend_rows cuts its work (attention.c; the same bits whatever the setting): the score bytes of the
    rows it takes at once (SCORE_TILE_BYTES; 0 or 1: a row at a time), and the query vectors each pass over the
    values serves (0: by their count; 4 or 8). None changes nothing. Returns the previous (tile, vectors)."""
    lib = _library()
    if lib is None:
        return (0, 0)
    return (int(lib.spx_set_score_tile(-1 if tile_bytes is None else tile_bytes)),
            int(lib.spx_set_value_shape(-1 if value_vectors is None else value_vectors)))


def residual_norm(x: torch.Tensor, a: torch.Tensor, post: torch.Tensor | None, w: torch.Tensor,
                  eps: float) -> torch.Tensor:
    """x += a (or RMSNorm(a)·post), in place; returns RMSNorm(x)·w. All (T, n) float32 contiguous."""
    lib = _library()
    if lib is None:
        return reference_residual_norm(x, a, post, w, eps)
    out = torch.empty_like(x)
    lib.spx_residual_norm(x.data_ptr(), a.data_ptr(), None if post is None else post.data_ptr(), w.data_ptr(),
                          x.shape[0], x.shape[1], eps, out.data_ptr(), torch.get_num_threads())
    return out


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm(x)·w of (T, n) float32 rows."""
    lib = _library()
    if lib is None:
        return reference_rmsnorm(x, w, eps)
    out = torch.empty_like(x)
    lib.spx_rmsnorm(x.data_ptr(), w.data_ptr(), x.shape[0], x.shape[1], eps, out.data_ptr(), torch.get_num_threads())
    return out


def glu(gu: torch.Tensor, act: str) -> torch.Tensor:
    """act(gate)·up for rows [gate | up] of gu (T, 2n) → (T, n); act "silu" or "gelu_tanh"."""
    lib = _library()
    if lib is None:
        return reference_glu(gu, act)
    n = gu.shape[1] // 2
    out = torch.empty(gu.shape[0], n)
    lib.spx_glu(gu.data_ptr(), gu.shape[0], n, ACTS[act], out.data_ptr(), torch.get_num_threads())
    return out


# ---- building and loading ---------------------------------------------------------------------------

def _library():
    if "lib" not in _state:
        kernels.ahead()
        _state["lib"], _state["why"] = _load()
    return _state["lib"]


def builds_here() -> list[str]:
    """The builds this machine can run, widest first."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ["portable"]
    capability = torch.backends.cpu.get_cpu_capability()
    return {"AVX512": ["avx512", "avx2", "portable"], "AVX2": ["avx2", "portable"]}.get(capability, ["portable"])


def first_build(compiler: str) -> build.Spec:
    """The build this machine loads first (kernels.ahead compiles it beside the others on a first run)."""
    return _spec(builds_here()[0], compiler)


def _spec(name: str, compiler: str) -> build.Spec:
    return build.Spec(f"attention-{name}", SOURCE, compiler, COMMON + BUILDS[name])


def load_build(name: str) -> ctypes.CDLL:
    """Compile (once per machine) and open one build; OSError or SubprocessError if it cannot be built."""
    compiler = build.c_compiler()
    if not compiler:
        raise OSError("no C compiler found (install gcc, or set CC)")
    lib = build.load(build.build_spec(_spec(name, compiler)))
    p, i64, f32, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int
    lib.spx_attention.argtypes = [p, p, i64, i64, p, i64, p, p, i32]
    lib.spx_attention.restype = i32
    lib.spx_set_attention_share.argtypes = [i32]
    lib.spx_set_attention_share.restype = i32
    if hasattr(lib, "spx_set_score_tile"):   # (a benchmark may load an older attention.c, without the two)
        lib.spx_set_score_tile.argtypes, lib.spx_set_score_tile.restype = [i64], i64
        lib.spx_set_value_shape.argtypes, lib.spx_set_value_shape.restype = [i32], i32
    lib.spx_residual_norm.argtypes = [p, p, p, p, i64, i64, f32, p, i32]
    lib.spx_rmsnorm.argtypes = [p, p, i64, i64, f32, p, i32]
    lib.spx_glu.argtypes = [p, i64, i64, i32, p, i32]
    for f in (lib.spx_residual_norm, lib.spx_rmsnorm, lib.spx_glu):
        f.restype = None
    return lib


def _load():
    why = ""
    for name in builds_here():
        try:
            lib = load_build(name)
            _state["build"] = name
            return lib, ""
        except (OSError, subprocess.SubprocessError) as e:
            why = f"building it failed ({str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__})"
    return None, why
