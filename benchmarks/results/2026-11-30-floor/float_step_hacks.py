"""Hot q8 kernel costs per group (shared, row) for builds with parts of the row's float step removed (float_step_hacks.diff
applied to specx/cpu/quant_avx512.h; the results are wrong on purpose: timing only)."""
import sys, statistics
sys.path.insert(0, "/work/main/benchmarks")
import row_floor
from specx.cpu import quant, quant_build
base = quant_build.FLAGS
variants = {"base": (), "nomul": ("-DSPX_HACK_NOMUL",), "nomins": ("-DSPX_HACK_NOMINS",),
            "nomul+nomins": ("-DSPX_HACK_NOMUL", "-DSPX_HACK_NOMINS"), "nofloat": ("-DSPX_HACK_NOFLOAT",)}
libs = {}
for k, f in variants.items():
    quant_build.FLAGS = base + f
    libs[k] = quant.load("avx512")
quant_build.FLAGS = base
ghz = row_floor.core_rates()["ghz"]
res = {(k, t): [] for k in libs for t in ("Q4_K", "Q6_K")}
for rep in range(5):
    for k, lib in libs.items():
        for t in ("Q4_K", "Q6_K"):
            c = row_floor.kernel_costs(lib, t, 100)
            per = c["groups"] / 2
            cyc = [(c["big"][m] - c["small"][m]) * ghz * 1e9 / per for m in row_floor.ROWS]
            res[k, t].append(row_floor.fit(list(row_floor.ROWS), cyc))
for t in ("Q4_K", "Q6_K"):
    for k in libs:
        sh = statistics.median(x[0] for x in res[k, t]); row = statistics.median(x[1] for x in res[k, t])
        print(f"{t} {k:14} shared {sh:5.1f} row {row:5.2f} cycles")
