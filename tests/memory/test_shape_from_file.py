"""A GGUF that specx's decoder runs is planned from its own tensor table (memory/shapes.shape_of_file)
instead of transformers' model built on the meta device: the Shape must be the same, field for field."""
from __future__ import annotations

import pytest

from conftest import fixture_model
from test_decoder_gguf import gguf_model, write_gguf
from specx.decoder import support
from specx.memory.shapes import gguf_config, shape_of, shape_of_file


def same_shape(path):
    info = support.inspect(path)
    assert not info.reason, info.reason
    return shape_of_file(info, "m") == shape_of(gguf_config(path), "m")


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen2-tied", "qwen3", "gemma3"])
def test_a_tiny_ggufs_shape_from_its_tensors_equals_transformers_meta_model(tmp_path, family):
    """Groups (names, kinds, parameters, matrix parameters and rows, buffers, module paths, order) and every
    other field equal what transformers' model on the meta device gives, for each family the decoder runs."""
    path = tmp_path / f"{family}.gguf"
    write_gguf(gguf_model(family), family, path)
    assert same_shape(path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_a_real_ggufs_shape_from_its_tensors_equals_transformers_meta_model(name):
    """The same on the fixture files (tied and untied heads, Qwen's biases, Gemma 3's extra norms)."""
    assert same_shape(fixture_model(name))
