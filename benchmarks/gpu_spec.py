"""Self-speculation and token trees on a lent GPU (issue 36): what they cost on the CUDA decoder, random weights.

    python benchmarks/gpu_spec.py [--budget-s 200] [--json $OUT/gpu_spec.json]
    python benchmarks/gpu_spec.py --smoke          (tiny shapes on the CPU, eagerly: checks the script runs)

Models are gpu_lean.py's: random bfloat16 weights from the real configs (the fixture Qwen2.5-Coder 1.5B/0.5B,
Llama-3.1-8B). Timings are the shapes' real costs; acceptance on random weights means nothing, so the
speedups below are computed from the acceptance the real Qwen 1.5B showed for the same skip sets on a CPU
(benchmarks/results/2026-11-26-self/README.md, its probe: teacher-forced, greedy), and say so.

Sections: a) a self-draft step (T = 1) and a scoring forward (T = 16) with layers left out, from graphs of
their own (decoder/graphs.py) and eagerly, against the full model's graphs; b) a verify of a 9-node token
tree (its mask) against a 9-token chain through the graphs, and the host cost of switching masks;
c) engine/loop.py driving the 1.5B: plain, `self` at a fixed shape, the 0.5B drafter as chains and as
trees of 8 (costs per round; acceptance is random weights'); d) computed speedups of `self` on the GPU.
The log's last lines are a summary table."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_lean as gl   # noqa: E402  (models, timing helpers, report and sections)
from gpu_lean import PROMPT, med, prompt, say, section, sync   # noqa: E402

# skip sets of the Qwen 1.5B (28 layers) whose acceptance the real model showed on a CPU (probe, float32
# activations unless said): every other layer from 2 (7 left out) 0.62, 2–15 (14) 0.41, the block 19–25
# (7) 0.23; the search's shape 7, 13, 17, 19 with int8 activations 0.83 (no int8 on the GPU: indicative)
QWEN_SHAPES = {"every-other-7": ((2, 4, 6, 8, 10, 12, 14), 0.62), "block-2-15": (tuple(range(2, 16)), 0.41),
               "late-19-25": (tuple(range(19, 26)), 0.23), "searched-4": ((7, 13, 17, 19), 0.83)}
TREE_PARENTS = (-1, -1, 0, 1, 2, 2, 4, 5)   # 8 nodes: two first tokens, then two branches, one forking again
VERIFY_ROWS = tuple(range(1, 10))


def skip_costs(decoder, env, skip: tuple[int, ...], rows: int) -> dict:
    """GPU ms of a forward of `rows` after PROMPT tokens, from the skip set's graphs (median of REPS) and eagerly
    (wall), and the wall ms of a graph call with its host work (inputs copied, output synchronised)."""
    import torch

    from specx.decoder.graphs import Graphs

    cache = decoder.new_cache()
    decoder.forward(cache, prompt(PROMPT, decoder.config.vocab_size))
    graphs = Graphs(decoder, cache) if env.graphs else None
    ids = prompt(rows, decoder.config.vocab_size, rows)
    walls, eager = [], []
    for i in range(gl.WARM + gl.REPS):
        for kind, out in (("graph", walls), ("eager", eager)):
            cache.crop(PROMPT)
            if graphs is not None and kind == "graph" and i == gl.WARM:
                graphs.timed = []
            sync(env)
            t = time.perf_counter()
            if kind == "graph" and graphs is not None:
                graphs.forward(ids, skip=skip)
            else:
                decoder.forward(cache, ids, skip=skip)
            sync(env)
            out.append((time.perf_counter() - t) * 1e3)
    gpu = []
    if graphs is not None:
        torch.cuda.synchronize()
        gpu = [a.elapsed_time(b) for a, b in graphs.timed]
    return {"gpu_ms": med(gpu) if gpu else med(walls[gl.WARM:]), "wall_ms": med(walls[gl.WARM:]),
            "eager_ms": med(eager[gl.WARM:])}


def sec_a(env):
    """Self-draft steps with layers left out against the full model, the 1.5B and the 8B."""
    res = {}
    for name, seed in (("qwen1.5b", 0), ("llama8b", 2)):
        model = env.keep.get(name) or gl.build(name, env, seed)
        env.keep[name] = model
        layers = model.config.num_hidden_layers
        shapes = dict(QWEN_SHAPES) if name == "qwen1.5b" else {
            "every-other-8": (tuple(range(2, 18, 2)), None), "every-other-12": (tuple(range(2, 26, 2)), None),
            "block-8": (tuple(range(layers - 10, layers - 2)), None)}
        shapes = {k: (tuple(i for i in s if 0 < i < layers - 1), a) for k, (s, a) in shapes.items()}
        out = {"full": {rows: skip_costs(model, env, (), rows) for rows in (1, 16)}}
        for label, (skip, _) in shapes.items():
            out[label] = {rows: skip_costs(model, env, skip, rows) for rows in (1, 16)}
            one, full = out[label][1], out["full"][1]
            out[label]["relative_gpu"] = one["gpu_ms"] / full["gpu_ms"]
            out[label]["relative_wall"] = one["wall_ms"] / full["wall_ms"]
            say(f"{name} {label} ({layers - len(skip)} of {layers} layers), T=1: graphs {one['gpu_ms']:.3f} ms GPU "
                f"({out[label]['relative_gpu']:.0%} of full), {one['wall_ms']:.3f} ms wall "
                f"({out[label]['relative_wall']:.0%}); eager {one['eager_ms']:.3f} ms "
                f"({one['eager_ms'] / full['wall_ms']:.1f}x the full graph's wall)")
        res[name] = out
    return res


def sec_b(env):
    """A 9-node tree verify (root + TREE_PARENTS) against a 9-token chain, through the graphs, alternating (each
    switch copies the other mask in), and the full model's verify cost by rows."""
    import torch

    from specx.engine.tree import Tree, tree_mask, tree_positions

    model = env.keep.get("qwen1.5b") or gl.build("qwen1.5b", env, 0)
    run = gl.Runner(model, env.graphs)
    costs = gl.forward_costs(run, env, VERIFY_ROWS)
    tree = Tree(tuple(prompt(len(TREE_PARENTS), model.config.vocab_size, 9)), TREE_PARENTS)
    mask = tree_mask(tree)
    positions = tree_positions(tree, PROMPT)
    ids = [5, *tree.tokens]
    walls = {"chain": [], "tree": []}
    for i in range(gl.WARM + gl.REPS):
        for kind in ("chain", "tree"):
            run.cache.crop(PROMPT)
            sync(env)
            t = time.perf_counter()
            if run.graphs is not None:
                run.graphs.forward(ids, positions if kind == "tree" else None, mask if kind == "tree" else None)
            else:
                model.forward(run.cache, ids, positions if kind == "tree" else None, mask if kind == "tree" else None)
            sync(env)
            walls[kind].append((time.perf_counter() - t) * 1e3)
    res = {"verify_ms_by_rows": costs, **{f"{k}_wall_ms": med(v[gl.WARM:]) for k, v in walls.items()}}
    say("1.5B verify GPU ms by rows: " + " ".join(f"T={t} {ms:.3f}" for t, ms in costs.items()))
    say(f"9 rows through the graphs, alternating: chain {res['chain_wall_ms']:.3f} ms wall, tree "
        f"{res['tree_wall_ms']:.3f} ms wall (its mask copied in each call)")
    del torch
    return res


def sec_c(env):
    """engine/loop.py on the 1.5B (graphs): plain, self at the searched shape (search off, k = 4 fixed), the 0.5B
    drafter as chains and as trees of 8 (k = 4, fixed): per round draft and verify ms."""
    from transformers import AutoTokenizer

    from specx.decoder.dense_lm import DenseLM
    from specx.drafters import self as selfdraft
    from specx.drafters.model import ModelDrafter, NoDrafter
    from specx.drafters.skipsearch import Search, Shape
    from specx.engine.loop import Generation
    from specx.engine.types import Sampling

    folder = gl.ROOT / ".gpu/tokenizer"
    if not folder.is_dir():
        return {"skipped": "no .gpu/tokenizer (gpu_check.sh prepare)"}
    tok = AutoTokenizer.from_pretrained(folder)
    target = DenseLM(env.keep.get("qwen1.5b") or gl.build("qwen1.5b", env, 0), tok, "target")
    drafter = DenseLM(env.keep.get("qwen0.5b") or gl.build("qwen0.5b", env, 1), tok, "drafter")
    usable = min(len(tok), target.vocab_size)
    ids = prompt(PROMPT, usable)
    layers = target.model.config.num_hidden_layers
    skip = tuple(i for i in QWEN_SHAPES["searched-4"][0] if 0 < i < layers - 1)

    def make(name, t):
        if name == "self":
            return selfdraft.SelfDrafter(t, usable, Search(layers, ("f32",), Shape(skip), done=True)), 0
        if name == "plain":
            return NoDrafter(), 0
        return ModelDrafter(drafter.fresh(), t.vocab_size, usable), 8 if name == "0.5b-tree8" else 0

    res = {}
    for _ in range(2):   # the second of each counts (graphs captured in the first)
        for name in ("plain", "self", "0.5b-chain", "0.5b-tree8"):
            t = target.fresh()
            draft, tree = make(name, t)
            gen = Generation(t, draft, ids, k=0 if name == "plain" else 4, max_tokens=gl.DECODE,
                             sampling=Sampling(), tree=tree)
            for _ in gen:
                pass
            s = gen.stats
            rounds = max(s.rounds, 1)
            res[name] = {"decode_tok_s": s.decode_tok_s, "rounds": s.rounds, "tokens_per_round": s.new_tokens / rounds,
                         "draft_ms_per_round": 1e3 * s.draft_s / rounds, "verify_ms_per_round": 1e3 * s.verify_s / rounds,
                         "drafted_per_round": s.drafted / rounds, "tree_rounds": s.tree_rounds,
                         "tree_nodes_per_tree_round": s.tree_nodes / max(s.tree_rounds, 1),
                         "overhead_share": s.overhead_share}
    for name, r in res.items():
        say(f"engine {name}: {r['decode_tok_s']:.1f} tok/s, {r['tokens_per_round']:.2f} tokens/round, draft "
            f"{r['draft_ms_per_round']:.2f} ms + verify {r['verify_ms_per_round']:.2f} ms a round "
            f"({r['drafted_per_round']:.1f} drafted; trees {r['tree_rounds']}), overhead {r['overhead_share']:.1%}")
    return res


def sec_d(env):
    """`self` on the GPU, computed (not measured): the real 1.5B's CPU acceptance per skip set, these GPU costs
    (graph wall ms, host included), verify by rows; the best k of 1–8."""
    a, b = gl.report.get("a_self_costs", {}).get("qwen1.5b"), gl.report.get("b_trees", {})
    if not a or not b or "verify_ms_by_rows" not in b:
        return {}
    full, verify = a["full"][1]["wall_ms"], b["verify_ms_by_rows"]
    out = {}
    for label, (_, alpha) in QWEN_SHAPES.items():
        draft = a[label][1]["wall_ms"]
        best = max(((sum(alpha ** i for i in range(k + 1)) * full / (k * draft + verify[k + 1] / verify[1] * full),
                     k) for k in range(1, 9)), default=(0.0, 0))
        out[label] = {"alpha_cpu": alpha, "draft_relative": draft / full, "speedup": best[0], "k": best[1]}
        say(f"self {label}: acceptance {alpha:.2f} (real 1.5B, CPU), draft {draft / full:.0%} of a step: "
            f"computed {best[0]:.2f}x at k={best[1]}")
    return out


def summary() -> None:
    r = gl.report
    print("\n==== summary " + "=" * 60, flush=True)
    print(f"device {r['device']['name']}, torch {r['device']['torch']}", flush=True)
    for name, out in r.get("a_self_costs", {}).items():
        if isinstance(out, dict) and "full" in out:
            print(f"{name} full T=1 {out['full'][1]['gpu_ms']:.3f} ms GPU / {out['full'][1]['wall_ms']:.3f} wall; "
                  + "; ".join(f"{k} {v['relative_gpu']:.0%} (eager {v[1]['eager_ms']:.2f} ms)"
                              for k, v in out.items() if k != "full"), flush=True)
    b = r.get("b_trees", {})
    if "chain_wall_ms" in b:
        print(f"9-row verify wall: chain {b['chain_wall_ms']:.3f} ms, tree {b['tree_wall_ms']:.3f} ms", flush=True)
    for name, e in (r.get("c_engine") or {}).items():
        if isinstance(e, dict) and "decode_tok_s" in e:
            print(f"engine {name}: {e['decode_tok_s']:.1f} tok/s, draft {e['draft_ms_per_round']:.2f} + verify "
                  f"{e['verify_ms_per_round']:.2f} ms/round", flush=True)
    for label, d in (r.get("d_computed") or {}).items():
        print(f"computed self {label}: {d['speedup']:.2f}x at k={d['k']} (draft {d['draft_relative']:.0%})", flush=True)
    for line in gl.failures():
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--json", type=Path, default=Path(os.environ.get("OUT", ".")) / "gpu_spec.json")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, eagerly")
    args = ap.parse_args()
    import torch

    env, name = gl.environment(args.smoke)
    if args.smoke:
        gl.REPS, gl.DECODE = 3, 16
    say(f"device {name}, torch {torch.__version__}, {env.dtype}; cap {args.budget_s:.0f} s")
    section("a_self_costs", 30, args.budget_s, sec_a, env)
    section("b_trees", 10, args.budget_s, sec_b, env)
    section("c_engine", 20, args.budget_s, sec_c, env)
    gl.report["d_computed"] = sec_d(env)
    gl.report["total_s"] = time.perf_counter() - gl.T0
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(gl.report, indent=1, default=str))
    say(f"done in {gl.report['total_s']:.0f} s; JSON: {args.json}")
    summary()


if __name__ == "__main__":
    main()
