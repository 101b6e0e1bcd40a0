"""A clean first run: what reaches the user's terminal is specx's own lines, not the libraries'."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from cli_helpers import ROOT
from conftest import fixture_model

TQDM_BAR = re.compile(r"\d+%\||it/s\]|s/it\]")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["auto", "float32"])
def test_the_embedded_default_first_run_shows_no_library_warning_or_bar(tmp_path, dtype):
    """`specx run smollm2` with an empty model cache (the embedded wheel's GGUF already fetched, so no
    network): by default the file runs as it is (no conversion); `--dtype float32` converts it for
    transformers, and that conversion and load say their steps in specx's lines. Either way no '\\r', no
    library warning, no tqdm bar reaches a stderr that is a file, even with the libraries' bars left on."""
    cache = tmp_path / "models"
    (cache / "embedded").mkdir(parents=True)
    shutil.copyfile(fixture_model("smollm2-135m"), cache / "embedded" / "smollm2.gguf")
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "PYTHONWARNINGS", "SPECX_DEBUG")}
    env.update(SPECX_MODEL_CACHE=str(cache), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = subprocess.run([sys.executable, "-m", "specx", "run", "smollm2", "-n", "8", "--dtype", dtype, "Say hi"], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=900)
    text = err.read_text()
    assert proc.returncode == 0, text
    assert proc.stdout.strip()
    assert ("converting smollm2.gguf to safetensors" in text) == (dtype == "float32")
    # the lean decoder drafts for itself (and copies); transformers' model only copies
    assert ("drafter: self+ngram" in text) == (dtype == "auto") and ("drafter: ngram" in text) == (dtype == "float32")
    assert ("no converted copy" in text) == (dtype == "auto"), text
    assert "\r" not in text and "Warning" not in text and "WARNING" not in text, text
    assert not TQDM_BAR.search(text) and "Loading weights" not in text and "Converting and de-quantizing" not in text
