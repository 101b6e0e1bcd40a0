"""Weight-only CPU layers: each agrees with its dequantize-then-matmul reference, a row's result does
not depend on the other rows of the forward, and speculative output equals plain output with them."""
from __future__ import annotations

import pytest
import torch

from specx.cpu import fastpath, qlinear

PRECISIONS = [p for p in ("fp16", "int8", "int4") if qlinear.usable(p)]


def _layer(out_features=384, in_features=512, seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.Linear(in_features, out_features)
    with torch.no_grad():
        layer.weight.normal_(0, 0.05)
    return layer


@pytest.mark.parametrize("precision", PRECISIONS)
def test_fast_layer_matches_its_reference(precision):
    """The packed kernel computes what dequantize + matmul computes (bf16 output rounding at most)."""
    layer = qlinear.LAYERS[precision](_layer())
    x = torch.randn(7, 512)
    fast, reference = layer(x), layer.reference(x)
    tolerance = 1e-5 if precision == "fp16" else 2 ** -7  # int8/int4 kernels return bf16
    assert ((fast - reference).abs() / reference.abs().clamp(min=1.0)).max() < tolerance


@pytest.mark.parametrize("precision", PRECISIONS)
def test_quantization_error_is_bounded(precision):
    """Dequantized weights stay within half a quantization step of the float weights."""
    base = _layer()
    layer = qlinear.LAYERS[precision](base)
    error = (layer.dequantized() - base.weight.detach()).abs()
    if precision == "fp16":
        assert error.max() < 1e-4
    elif precision == "int8":
        step = layer.scales.float()[:, None]
        assert (error <= step / 2 + 1e-7).all()
    else:
        w = base.weight.detach().view(384, -1, qlinear.INT4_GROUP)
        step = (w.amax(-1, keepdim=True) - w.amin(-1, keepdim=True)) / 15
        zero_rounding = w.abs().amax(-1, keepdim=True) * 2 ** -7   # the zero point is stored in bf16
        assert (error.view_as(w) <= step * (1 + 2 ** -8) / 2 + zero_rounding).all()


@pytest.mark.parametrize("precision", PRECISIONS)
def test_row_results_do_not_depend_on_the_batch(precision):
    """Verification feeds k+1 rows at once; each row must equal that row computed alone."""
    layer = qlinear.LAYERS[precision](_layer())
    x = torch.randn(9, 512)
    alone = torch.cat([layer(x[i:i + 1]) for i in range(9)])
    for rows in (2, 5, 9):
        together = layer(x[:rows])
        assert ((together - alone[:rows]).abs() / alone[:rows].abs().clamp(min=1.0)).max() < 1e-5


def test_int4_leaves_layers_without_whole_groups_in_float():
    """int4 needs in_features divisible by its group: other layers keep their float weights."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 48), torch.nn.Linear(48, 32))   # 48: not whole groups
    assert qlinear.quantize_linears(model, "int4") == 1
    assert isinstance(model[0], qlinear.Int4Linear) and type(model[1]) is torch.nn.Linear


def test_int4_leaves_layers_with_odd_output_rows_in_float():
    """The packed kernel takes rows in blocks of 16 (a VocabTrim head of 32,768 ids + specials has not)."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 40))
    assert qlinear.quantize_linears(model, "int4") == 1
    assert isinstance(model[0], qlinear.Int4Linear) and type(model[1]) is torch.nn.Linear
    assert model(torch.randn(3, 64)).shape == (3, 40)


@pytest.mark.parametrize("precision", [*PRECISIONS, "fp16 rowgemm"])
def test_speculative_greedy_equals_plain_in_each_precision(precision, make_lm, monkeypatch):
    """With the target's and drafter's weights packed, speculative greedy = plain greedy (same target);
    fp16 runs fbgemm, or specx's rowgemm with SPECX_KERNELS=rowgemm."""
    from specx.drafters.model import ModelDrafter
    from specx.drafters.ngram import NgramDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    if precision == "fp16 rowgemm":
        if not fastpath.row_kernel():
            pytest.skip("rowgemm not built here")
        monkeypatch.setenv("SPECX_KERNELS", "rowgemm")
        precision = "fp16"
    target = make_lm("qwen2", seed=3, hidden=128)
    draft = make_lm("qwen2", seed=4, layers=1, hidden=128)
    for lm in (target, draft):
        lm.model.float()
        assert fastpath.apply(lm.model, precision).startswith(f"kernels: {precision}")
    outs = []
    for k, drafter in ((0, NgramDrafter()), (4, ModelDrafter(draft, 96, 96)), (6, NgramDrafter())):
        gen = Generation(target, drafter, [0, 5, 9, 12, 5, 9], k=k, max_tokens=40, sampling=Sampling())
        outs.append([t for e in gen if isinstance(e, Round) for t in e.token_ids])
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) > 10


def test_auto_keeps_target_weights_and_packs_the_drafter(monkeypatch):
    """`auto`: the target is never quantized behind the user's back; the drafter gets int8dyn if it can."""
    assert fastpath.choose("auto", "target") == "none"
    assert fastpath.choose("auto", "drafter") == ("int8dyn" if qlinear.usable("int8dyn") else "none")
    monkeypatch.setenv("SPECX_KERNELS", "reference")
    assert fastpath.choose("auto", "drafter") == "none"


def test_unknown_precision_is_a_usage_error():
    from specx.errors import UsageError

    with pytest.raises(UsageError, match="int3"):
        fastpath.choose("int3", "target")


dynamic = pytest.mark.skipif(not qlinear.usable("int8dyn"), reason="no fbgemm in this PyTorch build")


@dynamic
def test_int8dyn_is_refused_for_the_target():
    """Activations scaled per forward make a row's result depend on the batch: never the target's."""
    from specx.errors import UsageError

    with pytest.raises(UsageError, match="target") as refused:
        fastpath.choose("int8dyn", "target")
    assert "--draft-quant int8dyn" in refused.value.hint
    assert fastpath.choose("int8dyn", "drafter") == "int8dyn"


@dynamic
def test_int8dyn_keeps_narrowing_layers_in_fp16():
    """A layer that narrows its input (an MLP's down projection) keeps fp16 weights; the others go int8."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 64), torch.nn.Linear(64, 64))
    assert qlinear.quantize_linears(model, "int8dyn") == 3
    assert [type(m) for m in model] == [qlinear.DynInt8Linear, qlinear.Fp16Linear, qlinear.DynInt8Linear]


@dynamic
def test_int8dyn_layer_stays_close_to_float():
    """Per-channel int8 weights and per-forward int8 activations: within a few percent of float."""
    base = _layer()
    layer = qlinear.DynInt8Linear(base)
    x = torch.randn(5, 512)
    exact = base(x).detach()
    assert ((layer(x) - exact).norm() / exact.norm()) < 0.03
    assert (layer.dequantized() - base.weight.detach()).abs().max() <= base.weight.abs().max() / 127


@dynamic
def test_int8dyn_drafter_keeps_greedy_output_the_targets(make_lm):
    """The drafter's numbers only decide what is proposed: with int8dyn, speculative = plain greedy."""
    from specx.drafters.model import ModelDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    target = make_lm("qwen2", seed=3, hidden=128)
    draft = make_lm("qwen2", seed=3, hidden=128)   # the target's own weights: long drafts get accepted
    target.model.float()
    draft.model.float()
    assert fastpath.apply(draft.model, "int8dyn").startswith("kernels: int8 weights and activations")
    outs, accepted = [], 0
    for k, drafter in ((0, ModelDrafter(draft, 96, 96)), (5, ModelDrafter(draft, 96, 96))):
        gen = Generation(target, drafter, [0, 5, 9, 12, 5, 9], k=k, max_tokens=40, sampling=Sampling())
        outs.append([t for e in gen if isinstance(e, Round) for t in e.token_ids])
        accepted = gen.stats.accepted
    assert outs[0] == outs[1] and len(outs[0]) > 10 and accepted > 0


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_bench_row_counts_packed_weights_and_names_their_precision(precision):
    """Packed weights are not parameters: the bench's weight bytes and precision sentence still see them."""
    from types import SimpleNamespace

    from specx.bench.peers import describe_pair

    model = torch.nn.Sequential(torch.nn.Embedding(10, 512), _layer())
    qlinear.quantize_linears(model, precision)
    pair = SimpleNamespace(target=SimpleNamespace(model=model, kernels=""), drafter=None)
    sentence, weights = describe_pair(pair, "float32")
    assert sentence == f"float32 ({precision} linear weights, float32 others)"
    assert weights == 4 * (10 * 512 + 384) + qlinear.WEIGHT_BYTES[precision] * 384 * 512
