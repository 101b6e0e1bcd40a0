"""Full and read-only disks are `error:`/`hint:` pairs with the right exit code, never "unexpected OSError";
`specx tune` shows what it measured before it saves (issue 33, item 6)."""
from __future__ import annotations

import errno
import tempfile

import pytest

from cli_helpers import cli_models, invoke, one_thread  # noqa: F401
from specx.state import settings
from specx.models import store
from specx.errors import SpecxError


def failing(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, {errno.ENOSPC: "No space left on device", errno.EROFS: "Read-only file system"}[code],
                      kwargs.get("dir") or (args[0] if args else None))
    return fail


def test_a_full_disk_during_config_set_is_exit_4_with_a_hint(monkeypatch):
    """[Errno 28] while writing the config file: exit 4 (insufficient resources), a hint, the file as it was."""
    settings.set_value("k", "6")
    monkeypatch.setattr(tempfile, "mkstemp", failing(errno.ENOSPC))
    result = invoke("config", "set", "max_tokens", "64")
    assert result.exit_code == 4, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error:") and "unexpected" not in lines[0] and lines[1].startswith("hint:")
    assert settings.read_config() == {"k": 6}


def test_a_read_only_config_dir_names_the_setting_that_moves_it(monkeypatch):
    """[Errno 30] while writing the config file: an error naming SPECX_HOME, not "unexpected OSError"."""
    monkeypatch.setattr(tempfile, "mkstemp", failing(errno.EROFS))
    result = invoke("config", "set", "max_tokens", "64")
    assert result.exit_code == 1 and "unexpected" not in result.stderr, result.output
    assert "SPECX_HOME" in result.stderr


def test_a_read_only_model_cache_that_needs_a_conversion_names_specx_model_cache(tmp_path, monkeypatch):
    """A GGUF whose converted copy must be written into a read-only model cache: a specx error naming
    SPECX_MODEL_CACHE (was: "unexpected OSError: [Errno 30]")."""
    from test_store import tiny_gguf

    monkeypatch.setenv("SPECX_MODEL_CACHE", str(tmp_path / "cache"))
    gguf = tiny_gguf(tmp_path / "m.gguf")
    monkeypatch.setattr(tempfile, "mkdtemp", failing(errno.EROFS))
    monkeypatch.setattr(store, "_convert", lambda *a: pytest.fail("converted into nowhere"))
    with pytest.raises(SpecxError) as e:
        store.converted_copy(gguf, "float32")
    assert "SPECX_MODEL_CACHE" in e.value.hint and "Read-only" in e.value.message


@pytest.mark.usefixtures("one_thread")
def test_tune_prints_its_table_before_a_save_that_fails(cli_models, tmp_path, monkeypatch):
    """The disk fills up as `specx tune` saves: the measured table is already on stdout, and the failure
    is exit 4 with a hint (was: the save came first, so a failed save lost the whole tune)."""
    from specx.policy import tuned

    prompts = tmp_path / "p.toml"
    prompts.write_text('[[prompt]]\ncategory = "a"\ntext = "w5 w9 w5 w9 w5"\n')
    monkeypatch.setattr(tuned, "record", failing(errno.ENOSPC))
    result = invoke("tune", str(cli_models["target"]), "-d", "ngram", "--prompts", str(prompts), "-n", "4", "-r", "1")
    assert result.exit_code == 4, result.output
    assert "specx tune · overall medians" in result.stdout and "ngram k=" in result.stdout
    assert result.stderr.splitlines()[-1].startswith("hint:")
