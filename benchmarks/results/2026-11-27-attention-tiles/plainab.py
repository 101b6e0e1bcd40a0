"""Plain decoding of three bench prompts (128 tokens) through specx.stream; run with PYTHONPATH set to one
tree or another to compare builds process by process."""
import sys, tomllib, statistics
from pathlib import Path
import specx
from specx.engine.types import Done
M = Path.home()/".cache/specx-fixture-models"
pair = specx.load(str(M/"qwen2.5-coder-1.5b.gguf"), "none")
prompts = [p for p in tomllib.loads((Path(specx.__file__).parent/"bench/prompts.toml").read_text())["prompt"]][:3]
rates = []
for p in prompts:
    for e in specx.stream(pair, p["text"], max_tokens=128, draft_policy="fixed"):
        if isinstance(e, Done): rates.append(e.stats.decode_tok_s)
print(specx.__file__, [f"{r:.1f}" for r in rates])
