"""Experiment: --tree 15 stands for 'the chain's k plus 8 nodes' (at most MAX_TREE); other settings as they are."""
import runpy
import sys

from specx.engine import loop
from specx.state.limits import MAX_TREE

orig = loop.Generation._tree_size


def _tree_size(self, k, room):
    if self.tree == 15:
        return max(0, min(k + 8, MAX_TREE, room)) if k else 0
    return orig(self, k, room)


loop.Generation._tree_size = _tree_size
sys.argv = ["trees.py"] + sys.argv[1:]
runpy.run_path("/work/main/benchmarks/trees.py", run_name="__main__")
