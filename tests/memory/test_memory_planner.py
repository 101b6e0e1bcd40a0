"""The planner on synthetic shapes and simulated budgets: fits, quantize, offload, refuse, SpecMemo."""
from __future__ import annotations

import re

import pytest

from specx.memory import backends as bk
from specx.memory.footprint import Group, Shape
from specx.memory.planner import PlanRefused, Request, plan
from specx.memory.probe import Budgets

M = 2**20
G = 2**30


def shape(layers=8, layer_params=50 * M, vocab=32000, hidden=1024, tied=False, experts=0, name="t") -> Shape:
    """A model of `layers` layers of `layer_params` (all linear), embeddings vocab × hidden."""
    emb = vocab * hidden
    groups = [Group("model.embed_tokens", "embed", emb, parts=("model.embed_tokens",))]
    for i in range(layers):
        groups.append(Group(f"model.layers.{i}", "layer", layer_params, layer_params, 4 * hidden,
                            parts=(f"model.layers.{i}",), layer=i))
        if experts:
            groups.append(Group(f"model.layers.{i}.mlp.experts", "experts", 4 * layer_params,
                                parts=(f"model.layers.{i}.mlp.experts",), layer=i))
    groups += [Group("lm_head", "head", 0 if tied else emb, parts=("lm_head",)),
               Group("model.norm", "norm", hidden, parts=("model.norm",))]
    return Shape(name, "llama", tuple(groups), layers, 4, 64, hidden, 4 * hidden, vocab, 32768, tied,
                 experts=8 if experts else 0, experts_per_token=2 if experts else 0)


def run(target, budgets, drafter=None, **req):
    return plan(target, drafter, budgets, Request(**{"context": 2048, **req}), simulated=True)


def on(p, device, role="target"):
    m = p.target if role == "target" else p.drafter
    return [x for x in m.placements if x.device == device]


def test_fits_whole_on_the_gpu_unquantized():
    p = run(shape(), Budgets(8 * G, 32 * G, 100 * G))
    assert p.target.devices == ("cuda:0",) and p.target.quant == "none" and p.target.dtype == "bfloat16"
    assert p.summary() == "target gpu" and p.k_cap == 4
    assert any(r.startswith("target: whole on the GPU in bfloat16") for r in p.reasons)


def test_quantizes_before_offloading():
    t = shape(layers=16, layer_params=100 * M)          # ~3.4 GiB in bf16, ~1.8 in int8, ~1.1 in nf4
    p = run(t, Budgets(int(1.6 * G), 32 * G, 100 * G))
    assert p.target.devices == ("cuda:0",) and p.target.quant == "nf4" and p.target.lossy
    p8 = run(t, Budgets(int(2.4 * G), 32 * G, 100 * G))
    assert p8.target.quant == "int8"


def test_offloads_the_last_layers_and_prices_bnb_offload_in_fp32():
    t = shape(layers=16, layer_params=100 * M)
    p = run(t, Budgets(int(0.8 * G), 32 * G, 100 * G))
    gpu_layers = [x.group for x in on(p, "cuda:0") if x.kind == "layer"]
    cpu_layers = [x for x in on(p, "cpu") if x.kind == "layer"]
    assert gpu_layers and cpu_layers
    assert max(int(g.rsplit(".", 1)[1]) for g in gpu_layers) < min(int(x.group.rsplit(".", 1)[1]) for x in cpu_layers)
    assert p.target.quant == "nf4"
    assert all(x.bytes == 4 * 100 * M for x in cpu_layers)   # bitsandbytes keeps offloaded modules in fp32
    assert any("float32" in r for r in p.reasons)
    assert re.fullmatch(r"target( \w+)? \d+% gpu / \d+% cpu", p.summary())
    assert p.total_bytes()["cuda:0"] <= 0.8 * G


def test_refuses_disk_offload_unless_allowed():
    t = shape(layers=16, layer_params=400 * M)   # even int4 weights exceed the 2 GiB budget
    with pytest.raises(PlanRefused) as e:
        run(t, Budgets(None, 2 * G, 100 * G))
    assert e.value.exit_code == 4 and "disk" in e.value.message and "budget" in e.value.table
    p = run(t, Budgets(None, 2 * G, 100 * G), allow_disk=True)
    assert on(p, "disk") and p.total_bytes()["cpu"] <= 2 * G


def test_refuses_a_budget_below_the_largest_layer():
    with pytest.raises(PlanRefused, match="largest layer"):
        run(shape(layers=2, layer_params=1000 * M), Budgets(None, int(0.5 * G), 100 * G), allow_disk=True)


def test_drafter_goes_first_onto_the_gpu():
    p = run(shape(layers=16, layer_params=100 * M), Budgets(int(2 * G), 32 * G, 100 * G),
            drafter=shape(layers=2, layer_params=20 * M, name="d"))
    assert p.drafter.devices == ("cuda:0",)
    assert p.summary().endswith("drafter gpu")


def test_speculation_shrinks_before_a_target_layer_leaves_the_gpu():
    t, d = shape(layers=8, layer_params=60 * M), shape(layers=2, layer_params=5 * M, name="d")
    roomy = run(t, Budgets(8 * G, 32 * G, 100 * G), drafter=d, context=32768, quant="none")
    need = roomy.total_bytes()["cuda:0"]
    tight = run(t, Budgets(need - roomy.speculation_bytes // 2, 32 * G, 100 * G), drafter=d, context=32768,
                quant="none")
    assert tight.target.devices == ("cuda:0",)
    assert tight.drafter_context < 32768 and tight.speculation_bytes < roomy.speculation_bytes
    assert any(r.startswith("speculation:") for r in tight.reasons)


def test_moe_experts_spill_before_any_attention_layer():
    p = run(shape(layers=4, layer_params=20 * M, experts=True), Budgets(int(0.9 * G), 32 * G, 100 * G),
            quant="none")
    assert all(x.device == "cuda:0" for x in p.target.placements if x.kind == "layer")
    assert any(x.device == "cpu" for x in p.target.placements if x.kind == "experts")
    assert 0 < p.expert_cache_bytes <= dict(p.headroom)["cuda:0"]
    assert any(r.startswith("experts:") for r in p.reasons)


def test_tied_head_stays_with_the_embeddings():
    p = run(shape(layers=4, tied=True), Budgets(int(0.3 * G), 32 * G, 100 * G), quant="none")
    devices = {x.kind: x.device for x in p.target.placements}
    assert devices["head"] == devices["embed"]


def test_cpu_only_prefers_float32_then_bfloat16():
    t = shape(layers=16, layer_params=100 * M)
    assert run(t, Budgets(None, 16 * G, 100 * G)).target.dtype == "float32"
    p = run(t, Budgets(None, 5 * G, 100 * G))
    assert p.target.dtype == "bfloat16" and p.target.devices == ("cpu",)


def test_registered_cpu_backends_are_used_when_nothing_else_fits(monkeypatch):
    for name in ("fp16", "int8", "int4"):   # specx's own CPU kernels: this test registers its own
        monkeypatch.delitem(bk._REGISTRY, ("cpu", name))
    t = shape(layers=16, layer_params=100 * M)
    with pytest.raises(PlanRefused):
        run(t, Budgets(None, int(2.6 * G), 100 * G))
    bk.register_backend("int4-test", "cpu", 0.5, other_dtype="float32", note="test backend")
    try:
        p = run(t, Budgets(None, int(2.6 * G), 100 * G))
        assert p.target.quant == "int4-test" and p.target.devices == ("cpu",) and p.target.lossy
    finally:
        bk._REGISTRY.pop(("cpu", "int4-test"))


def test_json_totals_add_up_and_every_decision_has_a_reason():
    p = run(shape(layers=16, layer_params=100 * M), Budgets(int(0.8 * G), 32 * G, 100 * G),
            drafter=shape(layers=2, layer_params=5 * M, name="d"))
    data = p.to_json()
    totals = data["total_bytes"]
    assert totals["overall"] == sum(v for k, v in totals.items() if k != "overall")
    assert all(r and r[0].islower() and len(r.split(". ")) == 1 for r in data["reasons"])
    assert {"target:", "drafter:", "dtype:", "max"} <= {r.split()[0] for r in data["reasons"]}
    assert any(r.startswith("context: planned for 4096") for r in run(shape(), Budgets(8 * G, 32 * G, 100 * G),
                                                                      context=None).reasons)


def test_load_kwargs_carry_the_device_map_and_bnb_config():
    pytest.importorskip("transformers")
    p = run(shape(layers=16, layer_params=100 * M), Budgets(int(0.8 * G), 32 * G, 100 * G))
    kw = p.load_kwargs("target")
    assert set(kw["device_map"]) == {part for g in shape(layers=16, layer_params=100 * M).groups for part in g.parts}
    q = kw["quantization_config"]
    assert p.target.quant == "nf4" and q.load_in_4bit and q.bnb_4bit_quant_type == "nf4"
    assert q.llm_int8_enable_fp32_cpu_offload


def test_a_drafter_on_the_cpu_is_priced_in_the_weights_it_will_run_in():
    """int8dyn (the default where fbgemm exists): int8 weights, fp16 in the down projections (a third
    of this layer's weights), 12 bytes per output row; `--draft-quant none`: float32."""
    from specx.cpu import fastpath
    from specx.memory.footprint import runtime_overhead

    if not fastpath.usable("int8dyn"):
        pytest.skip("this PyTorch build has no fbgemm")
    t, d = shape(), shape(layers=2, layer_params=12 * M, tied=True, name="d")
    dyn = run(t, Budgets(None, 32 * G, 100 * G), drafter=d)
    layer = next(p for p in dyn.drafter.placements if p.kind == "layer")
    assert dyn.drafter.quant == "int8dyn" and layer.bytes == int(12 * M * (1 + 1 / 3)) + 12 * 4 * 1024
    assert "drafter: whole on the CPU in int8 weights and activations" in " ".join(dyn.reasons)
    assert dyn.drafter.runtime_bytes == runtime_overhead(d.vocab) + 32000 * 1024 + 12 * 32000   # the tied head's int8 copy
    full = run(t, Budgets(None, 32 * G, 100 * G), drafter=d, draft_quant="none")
    assert full.drafter.quant == "none" and next(p for p in full.drafter.placements if p.kind == "layer").bytes \
        == 4 * 12 * M
    assert dyn.steady_bytes() < full.steady_bytes()


def test_a_refusal_never_shows_a_negative_budget():
    """What is left of a budget that other parts of the plan overspent is shown as 0 B, not as a negative
    size (a drafter refusal once said `cpu needs 25.8 MiB of -127.0 MiB`)."""
    from specx.memory.planner import refuse

    e = refuse("the drafter d does not fit", [("cpu", 25 * 2**20, -127 * 2**20), ("cuda:0", 1, None)])
    assert "-" not in e.message.split("(", 1)[1] and "of 0 B" in e.message and "of none" in e.message
    assert "-127" not in e.table


def test_a_models_runtime_memory_grows_with_its_vocabulary():
    """A tokenizer's memory grows with its entries: two models alike but for the vocabulary differ in their
    runtime bytes by RUNTIME_PER_ENTRY an entry, and the larger plan leaves less room for weights."""
    from specx.memory.footprint import RUNTIME_PER_ENTRY

    small, large = run(shape(vocab=32000), Budgets(None, 32 * G, 100 * G)), \
        run(shape(vocab=160000), Budgets(None, 32 * G, 100 * G))
    assert large.target.runtime_bytes - small.target.runtime_bytes == RUNTIME_PER_ENTRY * 128000

