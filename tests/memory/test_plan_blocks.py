"""The memory plan for a GGUF on a GPU (simulated budgets; no GPU needed): the bfloat16 copy that the CUDA decoder
was measured on while it fits, else the file's own blocks (gpu/blocks.py) priced at their planes' bytes, the
drafter moved out of the way before the target is pushed off the GPU or into bitsandbytes' conversion, and the
load arguments that take the block kernels."""
from __future__ import annotations

import pytest

from test_dense_blocks import block_gguf
from specx.decoder import support
from specx.memory import plan_for
from specx.memory.placement import _load
from specx.models.resolve import resolve


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return resolve(str(block_gguf(tmp_path_factory.mktemp("plan") / "tiny.gguf", "qwen2")))


def test_a_bfloat16_copy_that_fits_stays_the_dense_path(source):
    plan = plan_for(source, budgets="gpu=64MiB")
    assert plan.target.devices == ("cuda:0",) and plan.target.quant == "none" and plan.target.native == ""
    assert _load(plan.target, plan, "target", "auto", source).weights.split()[-1] != "blocks"


def test_blocks_where_a_bfloat16_copy_does_not_fit(source):
    """Whole on the GPU in the file's blocks, each group priced at its planes' bytes (FileInfo.gpu_groups), said
    in the reasons; the load takes the CUDA decoder on blocks."""
    plan = plan_for(source, budgets="gpu=3MiB")
    t = plan.target
    assert t.devices == ("cuda:0",) and t.native.endswith(" blocks") and "Q4_K" in t.native and not t.lossy
    priced = dict(support.inspect(source.path).gpu_groups)
    for p in t.placements:   # ("other": the rotary tables' buffers, which no file holds)
        key = (p.kind, int(p.group.rsplit(".", 1)[1])) if p.kind == "layer" else (p.kind, None)
        assert p.kind == "other" or p.bytes == priced.get(key, 0), p
    assert any("as the file holds them (specx's GPU block kernels)" in r and "as bfloat16 does not fit" in r
               for r in plan.reasons)
    load = _load(t, plan, "target", "auto", source)
    assert load.weights.startswith("dense cuda:0 bfloat16") and load.weights.endswith(" blocks")


def test_the_planned_bytes_are_what_the_decoder_holds(source):
    """The plan's bytes are what the dense decoder holds once it loads the file's blocks: its matrices' planes
    (the Q3_K parts dense in bfloat16) and its vectors priced as float32 (its biases, held in bfloat16, priced
    high)."""
    from specx.decoder.dense_lm import load

    lm = load(source.path, "cpu", "bfloat16", blocks=True)
    vectors = sum(p.numel() for p in lm.model.parameters() if p.dim() == 1)
    assert lm.model.weights.nbytes + 4 * vectors == sum(n for _, n in support.inspect(source.path).gpu_groups)


def test_the_drafter_makes_room_for_the_targets_blocks(source):
    """Placed first in bfloat16 the drafter would leave the target to bitsandbytes' nf4; planned again, the
    drafter goes to its blocks or the CPU and the target keeps its blocks whole on the GPU."""
    plan = plan_for(source, source, budgets="gpu=4MiB", k=4)
    assert plan.target.devices == ("cuda:0",) and plan.target.native.endswith(" blocks")
    assert any("so that the target fits whole on the GPU" in r for r in plan.reasons)


@pytest.mark.parametrize("asked", [{"dtype": "float32"}, {"quant": "nf4"}])
def test_no_blocks_where_another_precision_is_asked(source, asked):
    plan = plan_for(source, budgets="gpu=3MiB", **asked)
    assert not plan.target.native


def test_the_load_string_loads_the_blocks(source):
    """What placement writes ("dense DEVICE DTYPE CONTEXT blocks") loads the CUDA decoder's code on the blocks
    (here on the CPU: the same objects a GPU gets)."""
    from specx.gpu.qmatmul import BlockMatrix
    from specx.models.resolve import load_lm

    lm = load_lm(source, weights="dense cpu float32 64 blocks")   # (the tiny model holds 128 positions)
    assert lm.model.context == 64 and isinstance(lm.model.weights.output, BlockMatrix)
    assert not isinstance(load_lm(source, weights="dense cpu float32 64").model.weights.output, BlockMatrix)
