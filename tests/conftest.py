"""Shared fixtures: isolated specx dirs, tiny random models, the real fixture models."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

# A shell without job control starts background commands with SIGINT ignored, and children inherit
# that: the Ctrl-C tests would then test nothing. Restore Python's own handler (children: default).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# tests/<package>/ mirror specx's packages; a test module imports helpers from another by its plain name
# (`from test_session import make_pair`), as pytest's default import mode names them, so every folder is
# importable (file names are unique across folders, which that mode requires anyway).
HERE = Path(__file__).resolve().parent
for folder in sorted(p for p in HERE.iterdir() if p.is_dir() and p.name != "data" and not p.name.startswith((".", "_"))):
    if str(folder) not in sys.path:
        sys.path.append(str(folder))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
VOCAB = 96


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Config, data and state go to a temp dir; the model cache is shared (no re-conversions)."""
    monkeypatch.setenv("SPECX_HOME", str(tmp_path / "specx-home"))
    return tmp_path / "specx-home"


@pytest.fixture(autouse=True)
def cpu_below_the_gpu_tier(request, monkeypatch):
    """Tests below the `gpu` tier state CPU invariants (placement, kernels, measured costs), so on a
    machine with CUDA they run on the CPU as well: in this process, and in every `specx` process they
    start. The `gpu` tier runs as its own pytest command there (`pytest -m gpu`), since a CUDA runtime
    started under CUDA_VISIBLE_DEVICES="" stays blind for the rest of the process."""
    if request.node.get_closest_marker("gpu"):
        return
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def fixture_model(name: str) -> Path:
    """A real fixture GGUF; missing files fail in CI (never a silent skip) and skip elsewhere."""
    path = FIXTURES / f"{name}.gguf"
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"fixture model {path} is missing: run ../shared/models/fetch-models")
        pytest.skip(f"fixture model {path} is missing (run ../shared/models/fetch-models)")
    return path


def word_tokenizer(vocab: int = VOCAB, eos: int = 1):
    """A word-level tokenizer over `w0 … w{vocab-1}`; decode joins words with spaces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {f"w{i}": i for i in range(vocab)}
    tok = Tokenizer(models.WordLevel(words, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0", eos_token=f"w{eos}")


def tiny_model(arch: str = "llama", seed: int = 0, layers: int = 2, vocab: int = VOCAB, max_pos: int = 256,
               hidden: int = 64):
    """A random model built from a config, in float64 so that batch shape never flips an argmax."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cls, cfg_cls = {"llama": (LlamaForCausalLM, LlamaConfig), "qwen2": (Qwen2ForCausalLM, Qwen2Config)}[arch]
    cfg = cfg_cls(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_pos,
                  eos_token_id=1, bos_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = cls(cfg).double().eval()
    with torch.no_grad():  # sharper distributions than the default init: repetitive, ngram-friendly text
        model.lm_head.weight.mul_(8.0)
    model.generation_config.eos_token_id = 1
    return model


def tiny_lm(arch: str = "llama", seed: int = 0, layers: int = 2, **kw):
    from specx.models.lm import LM

    return LM(tiny_model(arch, seed, layers, **kw), word_tokenizer(), f"tiny-{arch}-{seed}")


@pytest.fixture
def make_lm():
    return tiny_lm


@pytest.fixture(scope="module")
def one_thread_module():
    """Tiny tensors: intra-op threads only add overhead (and stall badly on a busy 2-core box)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def generator(seed: int):
    """A seeded CPU torch.Generator: the randomness a test's kernels are handed."""
    import torch

    return torch.Generator().manual_seed(seed)
