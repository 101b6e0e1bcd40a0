"""An untied float32 embedding that stays memory-mapped is planned by the rows a run can touch."""
from __future__ import annotations

from dataclasses import replace

import pytest

from specx.cpu import fastpath
from specx.memory.mapped import CONVERTED, FAULT_AROUND, resident_embedding, stays_mapped
from specx.memory.planner import Request, plan
from specx.memory.probe import Budgets
from test_memory_planner import G, shape

rowgemm = pytest.mark.skipif(not fastpath.row_kernel(), reason="needs specx's rowgemm kernel built here")


def cpu_plan(t, context=512, **req):
    return plan(t, None, Budgets(None, 64 * G, 0), Request(context=context, **req))


def embed(p):
    return next(x for x in p.target.placements if x.kind == "embed")


def test_resident_rows_grow_with_tokens_up_to_the_whole_table():
    t = shape(hidden=1024)
    assert resident_embedding(t, 10**9, 1) == 4096 + FAULT_AROUND
    assert resident_embedding(t, 10**9, 100) == 100 * (4096 + FAULT_AROUND)
    assert resident_embedding(t, 10**6, 100) == 10**6


@rowgemm
def test_a_float32_cpu_plan_prices_the_mapped_embedding_by_its_context_and_says_so():
    t = replace(shape(vocab=151936, hidden=1536), file_dtype=CONVERTED)
    p = cpu_plan(t)
    full = 151936 * 1536 * 4
    assert embed(p).bytes == 512 * (8 * 1024 + FAULT_AROUND) < full   # a 6 KiB row spans 2 pages
    assert embed(p).scheme == "float32 (mapped)"
    assert any("input embedding stays memory-mapped" in r and "512 tokens" in r for r in p.reasons)
    head = next(x for x in p.target.placements if x.kind == "head")
    assert head.bytes == full                        # the head is read whole on every forward


@rowgemm
@pytest.mark.parametrize("change", [{"tied": True}, {"file_dtype": "bfloat16"}, {"file_dtype": ""}])
def test_a_tied_converted_or_unknown_table_is_priced_whole(change):
    t = replace(shape(vocab=151936, hidden=1536), **{"file_dtype": CONVERTED, **change})
    p = cpu_plan(t)
    assert embed(p).bytes == 151936 * 1536 * 4 and "mapped" not in embed(p).scheme


@rowgemm
def test_quantized_or_gpu_weights_are_priced_whole():
    t = replace(shape(), file_dtype=CONVERTED)
    assert not stays_mapped(t, "float32", "fp16", True)
    assert not stays_mapped(t, "bfloat16", "none", True)
    assert not stays_mapped(t, "float32", "none", False)
    assert stays_mapped(t, "float32", "none", True)
    gpu = plan(t, None, Budgets(8 * G, 32 * G, 0), Request(context=512), simulated=True)
    assert embed(gpu).bytes == t.groups[0].params * 2


def test_onednn_prepacking_copies_the_table(monkeypatch):
    import torch

    monkeypatch.setenv(fastpath.DISABLE_ENV, "onednn")
    t = replace(shape(), file_dtype=CONVERTED)
    assert stays_mapped(t, "float32", "none", True) is (not torch.backends.mkldnn.is_available())


def test_a_long_context_prices_the_whole_table():
    t = replace(shape(vocab=32000, hidden=1024), file_dtype=CONVERTED)
    assert embed(cpu_plan(t, context=32768)).bytes == 32000 * 1024 * 4


@pytest.mark.parametrize("family", ["llama", "qwen2-tied"])
def test_a_native_untied_table_is_read_by_rows_and_priced_at_nothing(tmp_path, family):
    """specx's lean decoder reads an untied input embedding from the file by rows (decoder/filerows.py):
    the plan prices it at 0 bytes and says so; a table that is also the output layer is priced whole."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.decoder import support
    from specx.memory.shapes import shape_of_file

    path = tmp_path / "m.gguf"
    write_gguf(gguf_model(family), family, path)
    info = support.inspect(path)
    t = replace(shape_of_file(info, "m"), file_bytes=info.groups, file_format=info.format)
    p = cpu_plan(t, context=64)
    assert p.target.native, "a GGUF on the CPU runs as the file holds it"
    if family == "llama":
        assert embed(p).bytes == 0 and embed(p).scheme.endswith("(read by rows)")
        assert any("input embedding is read from the weight file by rows" in r for r in p.reasons)
    else:
        assert embed(p).bytes == dict(t.file_bytes)[("embed", None)] > 0 and "rows" not in embed(p).scheme
        assert not any("by rows" in r for r in p.reasons)


def test_planning_a_native_target_asks_nothing_of_the_float_fast_path(tmp_path, monkeypatch):
    """specx's decoder uses none of the float32 fast path's copies, so its plan never asks about them (asking
    compiled rowgemm.c, 5 s, on a machine's first run of a GGUF); a tied table, where such a copy would be
    priced, shows it."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.decoder import support
    from specx.memory.shapes import shape_of_file

    def asked():
        raise AssertionError("the plan asked about the float32 fast path")

    monkeypatch.setattr(fastpath, "prepacks", asked)
    path = tmp_path / "m.gguf"
    write_gguf(gguf_model("qwen2-tied"), "qwen2-tied", path)
    info = support.inspect(path)
    t = replace(shape_of_file(info, "m"), file_bytes=info.groups, file_format=info.format)
    assert t.tied and cpu_plan(t, context=64).target.native


@pytest.mark.parametrize("offered", [True, False])
def test_the_plan_says_where_a_native_target_is_read_from(tmp_path, monkeypatch, offered):
    """A GGUF target on the CPU: the plan's sentence says its layers are copied to 2 MiB pages where the
    decoder will copy them (decoder/resident.wanted), and mapped from the file where it will not."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.decoder import resident, support
    from specx.memory.shapes import shape_of_file

    monkeypatch.setattr(resident, "wanted", lambda: offered)
    path = tmp_path / "m.gguf"
    write_gguf(gguf_model("llama"), "llama", path)
    info = support.inspect(path)
    t = replace(shape_of_file(info, "m"), file_bytes=info.groups, file_format=info.format)
    said = " ".join(cpu_plan(t, context=64).reasons)
    assert ("copied to 2 MiB pages" in said) is offered and ("mapped from the file" in said) is not offered


def test_a_native_cpu_drafter_reserves_the_headroom_of_its_chunked_prompt_pass(tmp_path):
    """A GGUF drafter on specx's decoder reads a long prompt PROMPT_CHUNK tokens at a time, as the target does:
    the plan's headroom is the larger of the two models' chunked activations, not the drafter's whole prompt
    at once (which priced the fixture pair's plan 224 MiB above it, 1.20x its measured peak RSS)."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.decoder import support
    from specx.memory.planner import activation_bytes
    from specx.memory.shapes import shape_of_file

    shapes = []
    for name in ("t", "d"):
        path = tmp_path / f"{name}.gguf"
        write_gguf(gguf_model("llama"), "llama", path)
        info = support.inspect(path)
        shapes.append(replace(shape_of_file(info, name), file_bytes=info.groups, file_format=info.format,
                              max_context=8192))   # (the tiny file says 128: a long prompt is the point)
    target, drafter = shapes
    context = 4096
    p = plan(target, drafter, Budgets(None, 64 * G, 0), Request(context=context))
    assert p.target.native and p.drafter.native, "both GGUFs run as their files hold them"
    chunked = max(activation_bytes(s, context, 4, native=True) for s in shapes)
    assert dict(p.headroom)["cpu"] == chunked < activation_bytes(drafter, context, 4)


@pytest.mark.parametrize("family", ["llama", "qwen2-tied"])
@pytest.mark.parametrize("vocab", [0, 65536])
def test_a_native_drafters_output_layer_is_read_by_rows_and_priced_at_nothing(tmp_path, family, vocab):
    """A GGUF drafter on specx's decoder whose vocabulary VocabTrim trims (vocab 65,536 here; the tiny files' own is
    too small to trim: 0) scores the rows its copy holds (priced in its runtime) and leaves its untied output
    layer in the file: the plan prices it at 0 bytes and says so. Untrimmed, tied (the embedding, copied), and
    for the target, whose every verify reads it whole, it is priced whole."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.decoder import support
    from specx.memory.shapes import shape_of_file

    shapes = []
    for name in ("t", "d"):
        path = tmp_path / f"{name}.gguf"
        write_gguf(gguf_model(family), family, path)
        info = support.inspect(path)
        shapes.append(replace(shape_of_file(info, name), file_bytes=info.groups, file_format=info.format))
    if vocab:
        shapes = [replace(s, vocab=vocab) for s in shapes]
    p = plan(shapes[0], shapes[1], Budgets(None, 64 * G, 0), Request(context=64))
    kind, mapped = ("embed", False) if family == "qwen2-tied" else ("head", bool(vocab))
    table = next(g for g in p.drafter.placements if g.kind == kind)
    assert (table.bytes == 0) is mapped and table.scheme.endswith("(read by rows)") is mapped
    assert next(g for g in p.target.placements if g.kind == kind).bytes > 0
    assert any("output layer stays in the weight file" in r for r in p.reasons) is mapped


def test_a_drafter_holding_its_targets_vocabulary_is_priced_without_a_tokenizer_of_its_own(tmp_path):
    """A GGUF drafter on specx's decoder whose file holds its target's vocabulary is given the target's tokenizer
    when it loads, so its runtime is priced without one, and the plan says so; a drafter of another vocabulary
    (here another model type) is priced with its own."""
    from test_decoder_gguf import gguf_model, write_gguf
    from specx.memory import plan_for
    from specx.memory.footprint import runtime_overhead
    from specx.memory.shapes import shape_for
    from specx.memory.variant import source_for

    for name, family in (("t", "llama"), ("same", "llama"), ("other", "qwen2")):
        write_gguf(gguf_model(family), family, tmp_path / f"{name}.gguf")
    target = source_for(str(tmp_path / "t.gguf"))
    for name, shared in (("same", True), ("other", False)):
        p = plan_for(target, source_for(str(tmp_path / f"{name}.gguf")), 64, budgets="cpu=64GiB")
        vocab = shape_for(source_for(str(tmp_path / f"{name}.gguf"))).vocab
        assert p.drafter.runtime_bytes == runtime_overhead(vocab, shared) > 0
        assert p.drafter.native
        assert any("given the target's tokenizer" in r for r in p.reasons) is shared
