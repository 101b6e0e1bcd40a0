"""The lean decoder's prompt pass with and without AMX (cpu/quant_amx.h), and its 1-token decode.

    python benchmarks/amx_prefill.py MODEL.gguf [--tokens 100,300,1000] [--reps 5] [--threads N]
    python benchmarks/amx_prefill.py --kernels 32,64,100,256,1000 [--reps 5] [--threads N]

Loads MODEL in q8 mode, then for each prompt length alternates AMX on and off (Library.use_amx, in this one
process) `--reps` times: a prompt pass from an empty cache, timed in wall-clock and in process CPU time (CPU
time is steadier on a machine others share). Then a 1-token decode after a 100-token prompt, alternating the
same way (it runs 1 row: the VNNI kernels either way). Prints medians and tok/s; checks that both ways give the
same logits bit for bit. `--kernels`: one q8 matmul of random weights of the 1.5B's shapes (gate+up, down,
q+k+v) and the 0.5B's (gate+up, down) at those row counts, AMX on and off alternating, process CPU time."""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path


def timed(model, ids: list[int]):
    model.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    out = model.forward(ids)
    return time.perf_counter() - wall, time.process_time() - cpu, out


KERNEL_SHAPES = [("Q4_K", 17920, 1536, "gate+up"), ("Q4_K", 1536, 8960, "down"), ("Q6_K", 1536, 8960, "down"),
                 ("Q4_K", 2048, 1536, "q+k+v"), ("Q8_0", 9728, 896, "0.5B gate+up"), ("Q5_0", 9728, 896, "0.5B gate+up"),
                 ("Q5_0", 896, 4864, "0.5B down"), ("Q8_0", 896, 4864, "0.5B down")]


def kernels(rows: list[int], reps: int) -> None:
    import numpy as np
    import torch

    from specx.cpu import quant, quant_ref

    lib = quant._default()
    print(f"threads {torch.get_num_threads()}; {lib.describe()}\n")
    print("| weights | M | VNNI ms | AMX ms | speed-up |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for name, n, k, what in KERNEL_SHAPES:
        w = quant_ref.random_weight(name, n, k, rng, extreme=False)
        for m in rows:
            x = torch.randn(m, k)
            runs = {True: [], False: []}
            for _ in range(reps):
                for on in (True, False):
                    lib.use_amx(on)
                    t = time.process_time()
                    lib.matmul(x, [w], "q8")
                    runs[on].append(time.process_time() - t)
            a, v = (statistics.median(runs[on]) * 1e3 for on in (True, False))
            print(f"| {what} {name} {n}x{k} | {m} | {v:.1f} | {a:.1f} | {v / a:.2f} |", flush=True)
    lib.use_amx(True)


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, nargs="?")
    parser.add_argument("--kernels", default="", help="row counts: time single matmuls instead")
    parser.add_argument("--tokens", default="100,300,1000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch/OpenMP threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from specx.cpu import quant
    from specx.decoder import lm as lean

    if args.kernels:
        return kernels([int(m) for m in args.kernels.split(",")], args.reps)

    model = lean.load(args.model, mode="q8")
    lib = quant._default()
    if not lib.amx:
        raise SystemExit(f"no AMX here: {lib.describe()}")
    print(f"threads {torch.get_num_threads()}; {model.kernels}\n")
    print("| prompt tokens | AMX wall ms | VNNI wall ms | AMX tok/s | VNNI tok/s | wall speed-up | CPU-time speed-up |")
    print("|---|---|---|---|---|---|---|")
    model.forward([1])
    for n in (int(t) for t in args.tokens.split(",")):
        ids = [(i * 7919) % 1000 + 100 for i in range(n)]
        runs = {True: [], False: []}
        for _ in range(args.reps):
            outs = {}
            for on in (True, False):
                lib.use_amx(on)
                wall, cpu, outs[on] = timed(model, ids)
                runs[on].append((wall, cpu))
            assert torch.equal(outs[True], outs[False]), "AMX changed the logits"
        med = {on: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for on, r in runs.items()}
        a, v = med[True], med[False]
        print(f"| {n} | {a[0] * 1e3:.0f} | {v[0] * 1e3:.0f} | {n / a[0]:.0f} | {n / v[0]:.0f} | {v[0] / a[0]:.2f} | "
              f"{v[1] / a[1]:.2f} |", flush=True)
    ids = [(i * 7919) % 1000 + 100 for i in range(100)]
    decode = {True: [], False: []}
    model.reset()
    model.forward(ids)
    for r in range(10 * args.reps):
        for on in (True, False):
            lib.use_amx(on)
            model.crop(100)
            t = time.perf_counter()
            model.forward([ids[r % 100]])
            decode[on].append(time.perf_counter() - t)
    a, v = (statistics.median(decode[on]) * 1e3 for on in (True, False))
    print(f"\n1-token decode after 100 tokens: AMX on {a:.1f} ms, off {v:.1f} ms (medians of {10 * args.reps})")
    lib.use_amx(True)


if __name__ == "__main__":
    main()
