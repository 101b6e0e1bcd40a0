"""Inside specx's calls into transformers and torch, their tqdm bars go through specx's progress and
their warnings are dropped; outside them, the user's own warnings and bars are untouched."""
from __future__ import annotations

import io
import sys
import warnings

from cli_helpers import Pty, screen, strip_ansi
from specx.progress import LibraryBar, library_calls, quiet


def test_library_bars_are_transient_rich_bars_on_a_terminal_and_nothing_otherwise(monkeypatch):
    """transformers' `logging.tqdm` (its hook) and the GGUF converter's `tqdm.auto` (patched by module
    name, restored after) both become LibraryBar: drawn and then cleared on a terminal, silent in a file."""
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as tf_logging

    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.setattr(tf_logging, "_tqdm_active", True)
    original = gguf_utils.tqdm
    pty = Pty(cols=100)
    monkeypatch.setattr(sys, "stderr", pty.stream)
    with library_calls():
        assert sum(tf_logging.tqdm(range(5), desc="Loading weights")) == 10
        assert gguf_utils.tqdm is LibraryBar
        assert list(gguf_utils.tqdm(["a", "b"], desc="Converting and de-quantizing GGUF tensors...")) == ["a", "b"]
    data = pty.close()
    assert "loading weights" in strip_ansi(data) and "\r" in data
    assert not any(line.strip() for line in screen(data, 100))   # transient: nothing stays
    assert gguf_utils.tqdm is original
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    with library_calls():
        list(tf_logging.tqdm(range(3), desc="Loading weights"))
    assert plain.getvalue() == ""


def test_warnings_are_dropped_inside_library_calls_only():
    """A FutureWarning raised inside is not shown; the same warning outside still is."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet():
            warnings.warn("inside", FutureWarning)
            warnings.warn("advice", UserWarning)
        warnings.warn("outside", FutureWarning)
    assert [str(w.message) for w in caught] == ["outside"]
