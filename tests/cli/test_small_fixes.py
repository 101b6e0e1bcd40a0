"""Small ones of issue 33, item 8: `/save` asks before overwriting, credentials in HF_ENDPOINT are never
echoed, and a path that shadows a preset is said. (CC="ccache gcc": test_kernel_cache.py; `rm` of a
symlinked converted folder: test_cache_paths.py.)"""
from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import pytest

from cli_helpers import invoke
from specx.cli import chat_commands
from specx.models import resolve as models


@pytest.fixture
def session(monkeypatch):
    monkeypatch.setattr(chat_commands, "transcript", lambda s: {"messages": s.messages})
    return SimpleNamespace(messages=[{"role": "user", "content": "new"}])


@pytest.mark.parametrize("answer, replaced", [("n", False), ("", False), ("y", True)])
def test_save_asks_before_overwriting_a_file(tmp_path, session, monkeypatch, answer, replaced):
    """`/save FILE` onto an existing file: replaced only after a yes (was: overwritten without asking)."""
    path = tmp_path / "chat.json"
    path.write_text("my notes")
    asked = []
    monkeypatch.setattr("builtins.input", lambda q: asked.append(q) or answer)
    chat_commands.handle(session, f"/save {path}")
    assert len(asked) == 1 and "overwrite" in asked[0]
    assert (json.loads(path.read_text())["messages"] == session.messages) if replaced else path.read_text() == "my notes"
    assert [p.name for p in tmp_path.iterdir()] == ["chat.json"]   # no temp file left


def test_save_to_a_new_file_does_not_ask(tmp_path, session, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda q: pytest.fail("asked for a new file"))
    chat_commands.handle(session, f"/save {tmp_path / 'new.json'}")
    assert json.loads((tmp_path / "new.json").read_text())["messages"] == session.messages


def test_credentials_in_hf_endpoint_are_never_echoed(monkeypatch):
    """HF_ENDPOINT=https://user:password@host: errors name the host, never the password."""
    from huggingface_hub import constants

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()   # nothing listens there
    monkeypatch.setattr(constants, "ENDPOINT", f"http://someone:s3cret-pass@127.0.0.1:{port}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    result = invoke("pull", "tiny-org/tiny-model")
    assert result.exit_code == 3, result.output
    assert "s3cret" not in result.output and "someone" not in result.output
    assert f"127.0.0.1:{port}" in result.stderr


def test_a_folder_named_like_a_preset_wins_and_is_said_once(tmp_path, monkeypatch, capfd):
    """`./smollm2` in the working directory and the preset smollm2: the folder is used, as documented, and
    a note says so (was: silently)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2").mkdir()
    (tmp_path / "smollm2" / "config.json").write_text("{}")
    monkeypatch.setattr(models, "_SAID", set(), raising=False)   # said once per process: a fresh one
    assert models.resolve("smollm2").path.name == "smollm2"
    models.resolve("smollm2")
    err = capfd.readouterr().err
    assert err.count("note:") == 1 and "not the preset smollm2" in err
    assert models.resolve("./smollm2").kind == "hf" and capfd.readouterr().err == ""   # an explicit path: no note
