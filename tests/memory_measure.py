"""Run in a fresh process: RSS before and after loading a target (and drafter) from the converted
safetensors cache and decoding to a given context; prints JSON. Used by tests/memory/test_memory_measured.py.
A path may end in `=WEIGHTS` (e.g. `=int8dyn`): the CPU weights that model is loaded in.

The converted copies are made (where missing) in a child process (`--convert PATHS`) before the baseline:
a conversion in this process would free memory that the load then reuses, and the measured RSS would be
less than a run's (seen on a fresh cache: 6499 MiB measured against 7645 MiB planned)."""
from __future__ import annotations

import gc
import json
import subprocess
import sys


def rss() -> tuple[int, int]:
    """(VmRSS, VmHWM) in bytes."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024


def main(context: int, k: int, paths: list[str]) -> None:
    import torch  # noqa: F401  (imports and allocator set-up belong to the baseline)
    import torch._dynamo  # noqa: F401  (a load imports it, and with it Triton and sympy where installed)
    import transformers  # noqa: F401
    try:
        import transformers.core_model_loading  # noqa: F401  (a load imports it, and with it accelerate)
    except ImportError:                          # transformers without it loads without it
        pass

    from specx.models.lm import LM  # noqa: F401
    from specx.models.resolve import load_lm, resolve, same_tokenizer

    subprocess.run([sys.executable, __file__, "--convert", *paths], check=True, stdout=sys.stderr)  # stdout is the JSON
    specs = [p.rpartition("=")[::2] if "=" in p else (p, "none") for p in paths]
    sources = [resolve(p) for p, _ in specs]
    gc.collect()
    before, _ = rss()
    lms = []
    for s, (_, weights) in zip(sources, specs):   # a drafter of the target's vocabulary gets its tokenizer, as in a run
        shared = bool(lms) and same_tokenizer(sources[0], s)
        lms.append(load_lm(s, "float32", weights, tokenizer=lms[0].tokenizer if shared else None))
    loaded, _ = rss()
    ids = list(range(1000, 1000 + context - k - 1))
    for lm in lms:                     # prompt, then one verify-sized forward: the cache holds `context`
        lm.forward(ids, last_only=True)
        lm.forward(list(range(2000, 2000 + k + 1)))
    del ids
    gc.collect()
    after, peak = rss()
    print(json.dumps({"before": before, "loaded": loaded, "after": after, "peak": peak,
                      "cached": [lm.cached for lm in lms]}))


def convert(paths: list[str]) -> None:
    """Make each model's converted float32 copy where it is missing (a child process of `main`)."""
    from specx.models.resolve import model_dir, resolve
    for p in paths:
        model_dir(resolve(p.rpartition("=")[0] if "=" in p else p), "float32")


if __name__ == "__main__":
    if sys.argv[1] == "--convert":
        convert(sys.argv[2:])
    else:
        main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
