"""A drafter's layers re-encoded to Q4_0 (decoder/reencode.py, `--draft-quant q4`): each wider layer matrix is
exactly the Q4_0 of gguf's values for its blocks; narrower ones, the output layer and the embedding keep the
file's blocks; a pair whose drafter is re-encoded still decodes exactly what the target alone does."""
from __future__ import annotations

import numpy as np
import pytest

from test_decoder import ids
from test_decoder_gguf import gguf_model, write_gguf
from specx.cpu import quant
from specx.cpu.lowbit_ref import quantize_q4_0
from specx.cpu.qweight import BLOCKS, dequantize
from specx.decoder import reencode
from specx.decoder.lm import load, read

pytestmark = pytest.mark.skipif(not quant.available(), reason="the block kernels are not built here")
TYPES = ("Q8_0", "F16", "Q4_0", "F32")   # cycled through the matrices: wider, wider, as narrow, wider


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return write_gguf(gguf_model("qwen2"), "qwen2", tmp_path_factory.mktemp("re") / "d.gguf", matrix_types=TYPES)


def test_wider_layers_become_the_q4_0_of_their_values_and_the_rest_stays(gguf):
    before, after = read(gguf).weights, read(gguf, reencode=True).weights
    olds, news = reencode.layer_matrices(before), reencode.layer_matrices(after)
    assert {m.name for m in olds} == {"Q8_0", "F16", "Q4_0", "F32"} and {m.name for m in news} == {"Q4_0"}
    for old, new in zip(olds, news):
        assert (new.rows, new.cols) == (old.rows, old.cols)
        if old.name == "Q4_0":
            assert np.array_equal(new.data, old.data)
        else:
            assert np.array_equal(new.data, quantize_q4_0(dequantize(old)))
    assert after.output.name == before.output.name and np.array_equal(after.output.data, before.output.data)
    assert after.embed.name == before.embed.name


def test_the_kernels_sentence_names_what_was_re_encoded(gguf):
    lm = load(gguf, mode="q4")
    assert "its F16/F32/Q8_0 layers re-encoded to Q4_0 in memory" in lm.kernels
    assert "--draft-quant q8 keeps the file's" in lm.kernels
    assert "re-encoded" not in load(gguf, mode="q8").kernels


def test_a_pair_with_a_re_encoded_drafter_decodes_what_the_target_alone_does(gguf):
    from specx.drafters.model import ModelDrafter
    from specx.engine.draft import NoDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    target, small = load(gguf, mode="q8"), load(gguf, mode="q4")
    prompt = [0] + ids(12, 5)

    def tokens(drafter, k):
        events = Generation(target.fresh(), drafter, prompt, k=k, max_tokens=32, sampling=Sampling())
        return [t for e in events if isinstance(e, Round) for t in e.token_ids]

    drafter = ModelDrafter(small.fresh(), target.vocab_size, target.vocab_size)
    rounds = [e for e in Generation(target.fresh(), drafter, prompt, k=4, max_tokens=32, sampling=Sampling())
              if isinstance(e, Round)]
    assert [t for r in rounds for t in r.token_ids] == tokens(NoDrafter(), 0)
    assert sum(r.accepted for r in rounds) > 0   # it drafted, and the target took some of it


def test_a_matrix_already_as_narrow_is_not_re_encoded():
    from specx.cpu.qweight import QWeight

    narrow = QWeight(BLOCKS["Q4_K"][0], np.zeros(144, dtype=np.uint8), 1, 256)
    wide = QWeight(BLOCKS["Q5_0"][0], np.zeros(22, dtype=np.uint8), 1, 32)
    assert not reencode.wider(narrow) and reencode.wider(wide)


def test_the_memory_plan_prices_each_layer_at_the_bytes_re_encoding_gives(gguf):
    """support.inspect's q4 groups: a layer's bytes with its wider matrices at Q4_0's, as reencode leaves them
    (the vectors unchanged); the file's bytes for everything else; the q4 scheme takes them, q8 the file's."""
    from specx.decoder import support
    from specx.memory.footprint import REENCODED, Shape, file_scheme, reencodes

    info = support.inspect(gguf)
    before, after = read(gguf).weights, read(gguf, reencode=True).weights
    file_bytes, q4_bytes = dict(info.groups), dict(info.q4_groups)
    for i, (old, new) in enumerate(zip(before.layers, after.layers)):
        saved = sum(m.nbytes for m in (*old.qkv, *old.o, *old.gate_up, *old.down)) - \
            sum(m.nbytes for m in (*new.qkv, *new.o, *new.gate_up, *new.down))
        assert saved > 0 and file_bytes[("layer", i)] - q4_bytes[("layer", i)] == saved
    assert {k: v for k, v in file_bytes.items() if k[0] != "layer"} == \
        {k: v for k, v in q4_bytes.items() if k[0] != "layer"}
    shape = Shape(name="d", model_type="qwen2", groups=(), layers=1, kv_heads=1, head_dim=1, hidden=1, intermediate=1,
                  vocab=1, max_context=1, tied=False, file_bytes=info.groups, file_format=info.format,
                  q4_bytes=info.q4_groups)
    assert reencodes("auto") and reencodes("q4") and not reencodes("q8")
    assert REENCODED in file_scheme(shape, True).name and file_scheme(shape, True).exact == info.q4_groups
    assert file_scheme(shape).exact == info.groups
