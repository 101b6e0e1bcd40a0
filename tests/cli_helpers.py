"""Tiny Hugging Face model folders for CLI tests, and helpers to run `specx` as a real process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def word_tokenizer(vocab: int, eos: int = 1, rename: dict[int, str] | None = None):
    """conftest's word-level tokenizer (`w0 … w{vocab-1}`), optionally with renamed tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    names = {i: (rename or {}).get(i, f"w{i}") for i in range(vocab)}
    tok = Tokenizer(models.WordLevel({w: i for i, w in names.items()}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0", eos_token=names[eos])


def make_folder(path: Path, *, seed: int = 0, layers: int = 1, max_pos: int = 256, vocab: int = 96,
                eos: int = 1, rename: dict[int, str] | None = None, model_type: str | None = None) -> Path:
    """A random Llama saved as safetensors + tokenizer; EOS can never win an argmax (runs hit -n)."""
    import json

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_pos,
                      eos_token_id=eos, bos_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)
        model.lm_head.weight[eos] = 0.0   # logit exactly 0: another token is (almost surely) higher
    model.generation_config.eos_token_id = eos
    model.save_pretrained(path, safe_serialization=True)
    word_tokenizer(vocab, eos, rename).save_pretrained(path)
    if model_type:
        config = json.loads((path / "config.json").read_text())
        config["model_type"] = model_type
        (path / "config.json").write_text(json.dumps(config))
    return path


def build_models(root: Path) -> dict[str, Path]:
    """Every folder the CLI tests use, keyed by role."""
    root.mkdir(parents=True, exist_ok=True)
    return {
        "target": make_folder(root / "target", layers=1),
        "small_ctx": make_folder(root / "small-ctx", layers=1, max_pos=32),
        "big": make_folder(root / "big", layers=3, seed=3),
        "long": make_folder(root / "long", layers=1, max_pos=1 << 20),
        "other_eos": make_folder(root / "other-eos", layers=1, eos=2),
        "renamed": make_folder(root / "renamed", layers=1, rename={7: "seven"}),
        "unknown_arch": make_folder(root / "unknown-arch", layers=1, model_type="frobnicator9000"),
    }


def specx_env(**extra: str) -> dict[str, str]:
    """A child environment: offline, quiet, no colour variables unless given."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM", "SPECX_DEBUG")}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1", TRANSFORMERS_VERBOSITY="error",
               PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TERM="xterm-256color", COLUMNS="100", LINES="30")
    env.update(extra)
    return env


def specx_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "specx", *args]


def run_specx(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    """`python -m specx ARGS` to completion; stdin empty unless `input` is given."""
    options = {"capture_output": True, "text": True, "timeout": 120, **kw}
    if "input" not in options:
        options.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(specx_cmd(*args), env=env or specx_env(), **options)


_BUILT: dict[str, dict[str, Path]] = {}


@pytest.fixture(scope="session")
def cli_models(tmp_path_factory) -> dict[str, Path]:
    """The tiny folders, built once per session whichever test module asks first."""
    if "models" not in _BUILT:
        _BUILT["models"] = build_models(tmp_path_factory.mktemp("cli-models"))
    return _BUILT["models"]


@pytest.fixture(autouse=False)
def one_thread():
    """Tiny models on a busy machine: one torch thread is ~40× faster than two (no spin-waiting)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def invoke(*args: str, input: bytes | str | None = None, env: dict[str, str] | None = None):
    """`specx ARGS` in-process through typer's CliRunner (stdout and stderr apart)."""
    from typer.testing import CliRunner

    from specx.cli import app

    return CliRunner().invoke(app, list(args), input=input, env=env)


# --- a pseudo-terminal in-process -----------------------------------------------------------------

class Pty:
    """A pseudo-terminal whose slave end is a text stream; a thread drains the master into `data`."""

    def __init__(self, cols: int = 100, rows: int = 30):
        import fcntl
        import struct
        import termios
        import threading

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.stream = open(slave, "w", encoding="utf-8", errors="replace", closefd=True)
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:   # EIO once the slave side is closed
                return
            if not data:
                return
            self.chunks.append(data)

    def close(self) -> str:
        """Close the slave, wait for the drain, return everything written (pty turns \\n into \\r\\n)."""
        self.stream.close()
        self.thread.join(timeout=10)
        os.close(self.master)
        return b"".join(self.chunks).decode("utf-8", "replace")


def call_app(*args: str) -> int:
    """`specx ARGS` in-process on the real sys streams (tests monkeypatch them); returns the exit code."""
    from specx.cli import app

    try:
        code = app(list(args), standalone_mode=False, prog_name="specx")
    except SystemExit as e:   # pragma: no cover
        code = e.code
    return code if isinstance(code, int) else 0


CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(data: str, width: int) -> list[str]:
    """The final screen of a tiny VT100: text, CR, LF, autowrap, CUU (A), EL (K); other CSI ignored."""
    grid: list[list[str]] = [[]]
    r = c = 0
    i = 0
    while i < len(data):
        m = CSI.match(data, i)
        if m:
            n = int(m.group(1)) if m.group(1).isdigit() else None
            if m.group(2) == "A":
                r = max(0, r - (n or 1))
            elif m.group(2) == "K":
                grid[r] = grid[r][:c] if n in (None, 0) else []
            i = m.end()
            continue
        ch = data[i]
        i += 1
        if ch == "\r":
            c = 0
        elif ch == "\n":
            r += 1
        elif ch >= " ":
            if c >= width:
                r, c = r + 1, 0
            while len(grid) <= r:
                grid.append([])
            row = grid[r]
            row.extend(" " * (c + 1 - len(row)))
            row[c] = ch
            c += 1
        while len(grid) <= r:
            grid.append([])
    return ["".join(row).rstrip() for row in grid]
