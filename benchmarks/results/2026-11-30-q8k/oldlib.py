"""An earlier build of quant.c (OLD.so, compiled from an earlier checkout) loaded beside the current one, its
settings copied from it, so that both run in one process (quant._state["lib"] picks the one the decoder calls)."""
from dataclasses import dataclass
from pathlib import Path

from specx.cpu import build, quant

NAMES = ("spx_matmul", "spx_dequantize_rows", "spx_stream_sum", "spx_build", "spx_set_xspan", "spx_set_prefetch",
         "spx_set_prefetch_one", "spx_set_prefetch_l2", "spx_set_decoded", "spx_set_amx", "spx_amx_init",
         "spx_amx_min_rows", "spx_pack_q4k", "spx_pack_q6k", "spx_pack_q40", "spx_unpack_rows")


@dataclass(frozen=True)
class Earlier(quant.Library):
    """An earlier build: before q8 with groups (quant.c's MODE_Q8K) its q8 is per 32 values for every type
    (`groups` False); from 0393060 to 205738d its MODE_Q8K takes Q4_K per 256 values, Q6_K per 32 (True)."""

    groups: bool = False

    def q8_groups(self) -> bool:
        return self.groups


def load(path: str, groups: bool = False) -> tuple[quant.Library, quant.Library]:
    """(old, new): the build at `path` (running q8 with groups where `groups`) and the current default, the old
    one set as the new one is."""
    new = quant._default()
    raw = build.load(Path(path))
    for n in NAMES:
        if not hasattr(raw, n):   # a function the earlier build did not have yet
            continue
        f, g = getattr(new.lib, n), getattr(raw, n)
        g.argtypes, g.restype = f.argtypes, f.restype
    old = Earlier(new.name, new.vnni, raw, Path(path), False, new.vbmi, groups)
    pf = new.lib.spx_set_prefetch(0)
    new.lib.spx_set_prefetch(pf)
    raw.spx_set_prefetch(pf)
    raw.spx_set_prefetch_one(new.lib.spx_set_prefetch_one(-2))
    raw.spx_set_prefetch_l2(new.lib.spx_set_prefetch_l2(-1))
    raw.spx_set_xspan(new.lib.spx_set_xspan(-1))
    return old, new


def use(lib: quant.Library) -> None:
    quant._state["lib"] = lib
