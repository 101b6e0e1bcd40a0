"""specx.decoder.tokenizer: the tokenizer of a GGUF file equals transformers' (AutoTokenizer with
gguf_file=...), fresh and from specx's cache; the cache is keyed by the tokenizer's content."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import fixture_model
from specx.decoder.gguf_file import open_gguf
from specx.decoder.tokenizer import load_tokenizer, same_vocabulary
from specx.drafters.compat import check_drafter
from specx.errors import ModelFileError, ModelUnavailable

FIXTURES = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
CORPUS = [
    "", "Hello, world!", "  leading and trailing  ", "tabs\tand\nnewlines\r\n\n\n", "    ", "\n",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)  # ok\n",
    'for (int i = 0; i < 10; ++i) { printf("%d\\n", i); }',
    "naïve café, Ελληνικά, русский, 日本語のテキスト, 한국어, עברית, العربية",
    "emoji 🙂👍🏽🇫🇷 e\u0301 \u200b",
    "1234567890 3.14159 -42 1e-9", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "<unk> <s> </s> <pad> <mask>",
]
CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Sort [3, 1, 2] in Python."},
        {"role": "assistant", "content": "sorted([3, 1, 2])"}, {"role": "user", "content": "  And reversed?\n"}]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A model cache of this test's own (the tokenizers cache lives in it)."""
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tokenizers"


def entries(cache) -> list:
    """The cached backends (each has its class and arguments beside it, in KEY.args.json)."""
    return sorted(p for p in cache.iterdir() if not p.name.endswith(".args.json"))


def assert_same(ref, tok, ref_json: str | None = None) -> None:
    """Same class, backend, special tokens, BOS/EOS behaviour, chat template, and the same ids for
    every text of the corpus (each special token in it too) and for a chat."""
    assert type(tok) is type(ref)
    assert tok.backend_tokenizer.to_str() == (ref_json or ref.backend_tokenizer.to_str())
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "all_special_ids",
                 "add_bos_token", "add_eos_token", "chat_template", "padding_side", "model_max_length"):
        assert getattr(tok, attr, None) == getattr(ref, attr, None), attr
    assert len(tok) == len(ref)
    texts = CORPUS + [f"x{s}y {s}" for s in ref.all_special_tokens]
    for text in texts:
        for special in (True, False):
            ids = ref(text, add_special_tokens=special)["input_ids"]
            assert tok(text, add_special_tokens=special)["input_ids"] == ids, (text, special)
            assert tok.decode(ids) == ref.decode(ids) and tok.decode(ids, skip_special_tokens=True) == \
                ref.decode(ids, skip_special_tokens=True)
    if ref.chat_template:
        for tokenize in (False, True):
            theirs = ref.apply_chat_template(CHAT, tokenize=tokenize, add_generation_prompt=True)
            assert tok.apply_chat_template(CHAT, tokenize=tokenize, add_generation_prompt=True) == theirs


def tiny_vocab_gguf(path, arch: str = "qwen2", kind: str = "gpt2", tokens: list[str] | None = None,
                    rows: int | None = None, bos: int | None = None, model: str | None = None,
                    template: str | None = None):
    """A GGUF with a small byte-level ("gpt2") or sentencepiece ("llama") vocabulary and one tensor."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    if kind == "gpt2":
        tokens = tokens or ["a", "b", "ab", "Ġ", "Ġa", "Ċ", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"]
        w.add_tokenizer_model(model or "gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types([1] * (len(tokens) - 4) + [3, 3, 3, 4])  # control x3, then user-defined
        w.add_token_merges(["a b", "Ġ a"])
        w.add_bos_token_id(6 if bos is None else bos)
        w.add_eos_token_id(8)
        w.add_pad_token_id(6)
        w.add_chat_template(template or "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    else:
        tokens = ["<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "ab", "▁ab"] + [f"<0x{i:02X}>" for i in range(256)]
        w.add_tokenizer_model("llama")
        w.add_token_list(tokens)
        w.add_token_scores([0.0] * 3 + [-1.0, -2.0, -3.0, -1.5, -2.5, -0.5] + [0.0] * 256)
        w.add_token_types([2, 3, 3] + [1] * 6 + [6] * 256)  # unknown, control, normal, byte
        w.add_bos_token_id(1 if bos is None else bos)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
    w.add_tensor("token_embd.weight", np.ones((rows or len(tokens), 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("arch, kind", [("qwen2", "gpt2"), ("llama", "gpt2"), ("llama", "llama"), ("gemma3", "llama")])
def test_tiny_vocabularies_equal_transformers_fresh_and_cached(tmp_path, cache, arch, kind):
    """Byte-level and sentencepiece vocabularies, under the classes AutoTokenizer picks (Qwen2Tokenizer,
    TokenizersBackend, GemmaTokenizer): equal to AutoTokenizer's, built fresh and loaded from the cache."""
    from transformers import AutoTokenizer

    path = tiny_vocab_gguf(tmp_path / "tiny.gguf", arch, kind)
    ref = AutoTokenizer.from_pretrained(str(tmp_path), gguf_file=path.name)
    with open_gguf(path) as g:
        assert_same(ref, load_tokenizer(g))
        assert len(entries(cache)) == 1
        assert_same(ref, load_tokenizer(g))


def test_a_cached_load_does_not_convert_again(tmp_path, cache, monkeypatch):
    """The second load reads the cached backend; transformers' converter is not called."""
    import transformers.integrations.gguf as tgguf

    with open_gguf(tiny_vocab_gguf(tmp_path / "t.gguf")) as g:
        first = load_tokenizer(g)
        monkeypatch.setattr(tgguf, "convert_gguf_tokenizer", lambda *a: pytest.fail("converted again"))
        assert load_tokenizer(g).backend_tokenizer.to_str() == first.backend_tokenizer.to_str()


def test_a_cached_load_imports_no_gguf_conversion(tmp_path, cache):
    """A fresh process loading a cached tokenizer imports neither transformers' GGUF tokenizer mapping
    nor its class lookup, and gets the ids the building process got."""
    import subprocess
    import sys

    import specx

    path = tiny_vocab_gguf(tmp_path / "t.gguf")
    with open_gguf(path) as g:
        ids = load_tokenizer(g)("ab a\nb")["input_ids"]
    code = ("import sys\nfrom specx.decoder.gguf_file import open_gguf\n"
            "from specx.decoder.tokenizer import load_tokenizer\n"
            f"print(load_tokenizer(open_gguf({str(path)!r}))('ab a\\nb')['input_ids'])\n"
            "print(sorted(m for m in sys.modules if 'gguf_tokenizer_mapping' in m or 'tokenization_auto' in m))")
    root = Path(specx.__file__).parents[1]   # this checkout's specx
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.splitlines() == [str(ids), "[]"]


def test_a_foreign_class_in_the_args_file_is_ignored(tmp_path, cache):
    """An args file naming something other than a transformers tokenizer class is not imported: the
    class is derived again and the file rewritten."""
    import json

    with open_gguf(tiny_vocab_gguf(tmp_path / "t.gguf")) as g:
        first = load_tokenizer(g)
        (args,) = cache.glob("*.args.json")
        doc = json.loads(args.read_text())
        args.write_text(json.dumps(doc | {"class": "json:JSONDecoder"}))
        assert type(load_tokenizer(g)) is type(first)
        assert json.loads(args.read_text()) == doc


def test_the_cache_is_keyed_by_the_tokenizer_not_the_file(tmp_path, cache):
    """Two files with the same vocabulary share an entry (other tensors, other quant); another
    vocabulary gets its own."""
    for name, rows in (("a.gguf", None), ("b.gguf", 12)):
        with open_gguf(tiny_vocab_gguf(tmp_path / name, rows=rows)) as g:
            load_tokenizer(g)
    assert len(entries(cache)) == 1
    tokens = ["a", "b", "ab", "Ġ", "Ġa", "Ċ", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool>"]
    with open_gguf(tiny_vocab_gguf(tmp_path / "c.gguf", tokens=tokens)) as g:
        assert load_tokenizer(g).convert_tokens_to_ids("<tool>") == 9
    assert len(entries(cache)) == 2


RENAMED = ["a", "b", "ab", "Ġ", "Ġa", "Ċ", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool>"]


@pytest.mark.parametrize("change, same", [
    ({}, True),                                      # another file (other tensors) of the same tokenizer
    ({"template": "{{ messages[0].content }}"}, True),   # another chat template only
    ({"tokens": RENAMED}, False),                    # one token renamed
    ({"bos": 7}, False),                             # another special token id
    ({"arch": "llama"}, False),                      # the same metadata picking another tokenizer class
])
def test_one_vocabulary_is_known_from_the_metadata_as_the_check_finds_it(tmp_path, cache, change, same):
    """same_vocabulary (a drafter's check without building tokenizers) says yes only where the tokenizers built
    from both files pass check_drafter."""
    with (open_gguf(tiny_vocab_gguf(tmp_path / "a.gguf")) as a,
          open_gguf(tiny_vocab_gguf(tmp_path / "b.gguf", rows=12, **change)) as b):
        assert same_vocabulary(a, b) == same
        if same:
            ta, tb = load_tokenizer(a), load_tokenizer(b)
            check_drafter(ta, tb, frozenset({ta.eos_token_id}), frozenset({tb.eos_token_id}))


def test_a_damaged_cache_entry_is_rebuilt(tmp_path, cache):
    with open_gguf(tiny_vocab_gguf(tmp_path / "t.gguf")) as g:
        expect = load_tokenizer(g).backend_tokenizer.to_str()
        (entry,) = entries(cache)
        entry.write_text('{"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0')
        assert load_tokenizer(g).backend_tokenizer.to_str() == expect
        assert entry.read_text() == expect


def test_an_unwritable_cache_still_loads(tmp_path, monkeypatch):
    """A cache path that cannot be created (under a regular file): the tokenizer loads, uncached."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(tmp_path / "file" / "cache"))
    with open_gguf(tiny_vocab_gguf(tmp_path / "t.gguf")) as g:
        assert load_tokenizer(g).convert_tokens_to_ids("ab") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "t.gguf"]


@pytest.mark.parametrize("bad, error", [
    (dict(bos=99), ModelFileError),                     # a special token id past the vocabulary
    (dict(model="bert"), ModelUnavailable),             # a tokenizer model transformers cannot build
    (dict(tokens=["a", "b", "ab", "Ġ", "x", "Ċ", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"]),
     ModelUnavailable),                                 # a merge of a token the vocabulary lacks (Ġa)
])
def test_bad_tokenizer_metadata_is_one_specx_error(tmp_path, cache, bad, error):
    with open_gguf(tiny_vocab_gguf(tmp_path / "t.gguf", **bad)) as g, pytest.raises(error):
        load_tokenizer(g)


def test_a_file_without_a_vocabulary_is_refused(tmp_path, cache):
    import gguf

    w = gguf.GGUFWriter(str(tmp_path / "novocab.gguf"), arch="llama")
    w.add_tensor("w", np.ones(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open_gguf(tmp_path / "novocab.gguf") as g, pytest.raises(ModelFileError, match="no vocabulary"):
        load_tokenizer(g)


# ---- the fixture models --------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    """transformers' own GGUF tokenizer (its reader, converter and from_pretrained), loaded once per
    model for this module. The class is the one AutoTokenizer picks; AutoTokenizer itself would also
    read the whole file with gguf.GGUFReader for a config (10-25 s a fixture here), so the choice of
    class is held to AutoTokenizer's on the tiny files above (qwen2, llama, gemma3: every fixture's)."""
    from specx.decoder.tokenizer import tokenizer_class

    loaded = {}

    def get(name):
        if name not in loaded:
            path = fixture_model(name)
            with open_gguf(path) as g:
                cls = tokenizer_class(g)
            ref = cls.from_pretrained(str(path.parent), gguf_file=path.name)
            loaded[name] = ref, ref.backend_tokenizer.to_str()
        return loaded[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_tokenizers_equal_transformers_fresh_and_cached(name, reference, cache):
    """Each fixture: built fresh, then from the cache, equal to transformers' (encode/decode of a
    varied corpus, special tokens, BOS/EOS, chat template)."""
    ref, ref_json = reference(name)
    with open_gguf(fixture_model(name)) as g:
        assert_same(ref, load_tokenizer(g), ref_json)
        assert_same(ref, load_tokenizer(g), ref_json)
    assert len(entries(cache)) == 1


@pytest.mark.slow
def test_the_fixture_drafter_has_its_targets_vocabulary(cache):
    """The Qwen 0.5B drafter's file and the 1.5B target's differ in their chat templates only: one vocabulary,
    as the check on the built tokenizers finds; SmolLM2's is another."""
    with (open_gguf(fixture_model("qwen2.5-coder-1.5b")) as a, open_gguf(fixture_model("qwen2.5-coder-0.5b")) as b,
          open_gguf(fixture_model("smollm2-135m")) as c):
        assert same_vocabulary(a, b) and not same_vocabulary(a, c)
        ta, tb = load_tokenizer(a), load_tokenizer(b)
        check_drafter(ta, tb, frozenset({ta.eos_token_id}), frozenset({tb.eos_token_id}))
