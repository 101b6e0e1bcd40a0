"""The packages form layers: no module imports a package above its own (docs/architecture.md), so no
import cycle runs between packages and nothing below the CLI imports it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "specx"
# lowest first; modules of one layer may import each other and anything lower
LAYERS = [("errors", "terminal", "progress"), ("state",), ("presets",), ("cpu", "gpu"), ("decoder",), ("models",),
          ("memory",), ("policy",), ("engine",), ("drafters",), ("api", "options"), ("bench",), ("serve",), ("cli",), ("__init__", "__main__")]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def unit(module: str) -> str:
    """The layer unit of a dotted module under specx: its package, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> set[str]:
    """Every specx module this file imports (function-level imports too), as dotted names."""
    rel = path.relative_to(ROOT.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{module}.{alias.name}"
                is_module = (ROOT.parent / Path(*target.split("."))).with_suffix(".py").exists() or \
                    (ROOT.parent / Path(*target.split("."))).is_dir()
                out.add(target if is_module else module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "specx" or m.startswith("specx.")}


def test_no_package_imports_a_higher_layer():
    """Each import goes to the same layer or a lower one (the package graph has no cycle, the CLI is on top)."""
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        here = unit(".".join(rel.parts))
        assert here in RANK, f"{path}: a new package needs its place in LAYERS (and in docs/architecture.md)"
        for target in imports(path):
            there = unit(target)
            if target != "specx" and RANK[there] > RANK[here]:
                wrong.append(f"{rel} imports {target}")
    assert not wrong, "\n".join(wrong)
