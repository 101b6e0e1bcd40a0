"""The bundled prompt suite and the validation of a user's prompts file."""
from __future__ import annotations

import json

import pytest

from specx.bench import suite
from specx.errors import UsageError


def test_bundled_suite_has_five_categories_of_four_prompts():
    prompts = suite.bundled()
    cats = suite.categories(prompts)
    assert {"code", "chat", "summarisation", "math", "rewrite"} <= set(cats)
    assert all(sum(p.category == c for p in prompts) >= 4 for c in cats)
    assert len({p.name for p in prompts}) == len(prompts)


def test_calibration_takes_the_first_prompt_of_every_category():
    prompts = suite.bundled()
    cal = suite.calibration(prompts)
    assert [p.category for p in cal] == suite.categories(prompts)
    assert all(p is next(q for q in prompts if q.category == p.category) for p in cal)


def test_toml_and_json_files_load(tmp_path):
    toml = tmp_path / "p.toml"
    toml.write_text('[[prompt]]\ncategory = "code"\ntext = "def f():"\n\n[[prompt]]\ncategory = "qa"\n'
                    'name = "why"\ntext = "Why?"\n')
    assert [(p.name, p.category) for p in suite.load(toml)] == [("code-1", "code"), ("why", "qa")]
    js = tmp_path / "p.json"
    js.write_text(json.dumps({"prompt": [{"category": "x", "text": "hello"}]}))
    assert suite.load(js)[0].text == "hello"
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([{"category": "x", "text": "hello", "name": "h"}]))
    assert suite.load(bare)[0].name == "h"


@pytest.mark.parametrize("name, content, fragment", [
    ("missing.toml", None, "not found"),
    ("bad.toml", "[[prompt]\ncategory = 1", "not valid toml"),
    ("bad.json", "{", "not valid json"),
    ("empty.toml", "", "holds no prompts"),
    ("typo.toml", '[[prompt]]\ncategori = "code"\ntext = "x"\n', "unknown key `categori`"),
    ("top.toml", 'prompts = 1\n', "unknown top-level key `prompts`"),
    ("notext.toml", '[[prompt]]\ncategory = "code"\n', "has no `text`"),
    ("blank.toml", '[[prompt]]\ncategory = "code"\ntext = "  "\n', "must be a non-empty string"),
    ("number.json", '[{"category": "c", "text": 5}]', "must be a non-empty string"),
    ("dupe.toml", '[[prompt]]\ncategory = "c"\nname = "a"\ntext = "x"\n[[prompt]]\ncategory = "c"\nname = "a"\n'
                  'text = "y"\n', "named `a`"),
    ("list.json", '["just text"]', "not a table"),
])
def test_bad_prompts_files_get_one_clear_usage_error(tmp_path, name, content, fragment):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError) as e:
        suite.load(path)
    assert fragment in e.value.message.lower() or fragment in e.value.message
    assert e.value.exit_code == 2 and e.value.hint


def test_a_typo_gets_a_suggestion(tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text('[[prompt]]\ncategory = "code"\ntxt = "x"\n')
    with pytest.raises(UsageError) as e:
        suite.load(path)
    assert "did you mean `text`" in e.value.hint
