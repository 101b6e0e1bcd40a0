"""`specx serve` on 127.0.0.1 with the real SmolLM2 and the real `openai` client: the issue's list.
One server per module (the model loads once); answers are short."""
from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import fixture_model
from cli_helpers import specx_cmd, specx_env

pytestmark = pytest.mark.slow
N = 12   # tokens per answer: enough to differ, cheap


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """An in-process server (its own thread) on an engine, plus a second pair for `specx run`'s answers."""

    def __init__(self, path):
        from specx.api import prepare
        from specx.options import RunOptions, from_keywords
        from specx.serve.metrics import Metrics
        from specx.serve.worker import Engine

        self.model, self.defaults = str(path), RunOptions()
        options = from_keywords(self.model).model
        self.reference = prepare(options)        # what `specx run` answers with (api.stream)
        self.engine = Engine(metrics=Metrics(self.model), load=lambda: prepare(options)).start()   # as serve() does
        # `--drafter ngram`: drafts that depend on the text alone (a self-draft's layer search is scored by measured
        # time, so two pairs may draft differently, and a sampled answer's coins depend on the drafts)
        copying = from_keywords(self.model, drafter="ngram").model
        self.copying_reference = prepare(copying)
        self.copying = Engine(metrics=Metrics(self.model), load=lambda: prepare(copying)).start()
        self.jobs = []
        making = self.engine.job
        self.engine.job = lambda *a: self.jobs.append(making(*a)) or self.jobs[-1]
        self.servers = []
        self.port, self.keyed_port = self._serve(None, self.defaults), self._serve("s3cret", self.defaults)
        # `specx serve --drafter ngram --draft-policy fixed`
        self.fixed_port = self._serve(None, RunOptions(draft_policy="fixed"), self.copying)

    def _serve(self, key, defaults, engine=None):
        from specx.serve import app
        from specx.serve.server import make_server

        port = free_port()
        engine = engine or self.engine
        server = make_server(app.build(engine, self.model, defaults, key, engine.metrics), engine, "127.0.0.1", port)
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.02)
        self.servers.append(server)
        return port

    def client(self, key="none", port=None):
        from openai import OpenAI

        return OpenAI(base_url=f"http://127.0.0.1:{port or self.port}/v1", api_key=key, max_retries=0, timeout=120)

    def specx_run(self, prompt, pair=None, **run) -> str:
        from specx.api import generate
        from specx.options import RunOptions

        return generate(pair or self.reference, prompt, RunOptions(max_tokens=N, **run))

    def stop(self):
        for server in self.servers:
            server.should_exit = True
        self.engine.close()
        self.copying.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    path = fixture_model("smollm2-135m")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECX_HOME", str(tmp_path_factory.mktemp("serve-home")))
        s = Served(path)
        yield s
        s.stop()


def test_chat_and_completion_equal_specx_run_streamed_or_not(served):
    """Greedy: the served text is `specx run`'s for the same message (chat) or raw prompt (completion)."""
    client, msg = served.client(), [{"role": "user", "content": "Name three colours."}]
    whole = client.chat.completions.create(model=served.model, messages=msg, max_tokens=N)
    assert whole.choices[0].message.content == served.specx_run("Name three colours.")
    assert whole.usage.completion_tokens == N and whole.choices[0].finish_reason == "length"
    assert whole.model_extra["specx"]["drafter"] == served.reference.drafter.name   # what `specx run` drafts with
    chunks = list(client.chat.completions.create(model=served.model, messages=msg, max_tokens=N, stream=True,
                                                 stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == N and chunks[-2].model_extra["specx"]["reason"] == "length"
    prompt = "Shopping list:\n- apples\n-"
    text = client.completions.create(model=served.model, prompt=prompt, max_tokens=N).choices[0].text
    assert text == served.specx_run(prompt, raw=True)
    streamed = client.completions.create(model=served.model, prompt=prompt, max_tokens=N, stream=True)
    assert "".join(c.choices[0].text for c in streamed if c.choices) == text
    assert [m.id for m in client.models.list().data] == [served.model]


def test_sampling_with_a_seed_and_stop_strings_equal_specx_run(served):
    """temperature, top_p, seed and stop as `specx run` takes them. Under a fixed draft policy and the n-gram
    drafter: `auto` drafts by measured time, and so does a self-draft's layer search, and a sampled answer's
    coins depend on the drafts (so `specx run`'s too)."""
    from specx.engine.types import Sampling

    msg = [{"role": "user", "content": "Write a short poem."}]
    got = served.client(port=served.fixed_port).chat.completions.create(
        model=served.model, messages=msg, max_tokens=N, temperature=0.8, top_p=0.9, seed=7, stop=["bright"])
    alone = served.specx_run("Write a short poem.", served.copying_reference, sampling=Sampling(0.8, None, 0.9, 7),
                             stop=("bright",), draft_policy="fixed")
    assert got.choices[0].message.content == alone


def test_eight_concurrent_clients_are_all_answered_each_as_alone(served):
    prompts = [f"Count from {i} to {i + 5}." for i in range(8)]
    alone = [served.specx_run(p) for p in prompts]
    got: dict[int, str] = {}

    def ask(i):
        reply = served.client().chat.completions.create(model=served.model, max_tokens=N,
                                                        messages=[{"role": "user", "content": prompts[i]}])
        got[i] = reply.choices[0].message.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert [got.get(i) for i in range(8)] == alone


def test_a_conversation_resent_with_one_more_turn_reuses_its_prefix(served):
    client, msgs = served.client(), [{"role": "user", "content": "Hi!"}]
    first = client.chat.completions.create(model=served.model, messages=msgs, max_tokens=N)
    msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "Why?"}]
    second = client.chat.completions.create(model=served.model, messages=msgs, max_tokens=N)
    assert second.model_extra["specx"]["reused_prompt_tokens"] >= first.usage.prompt_tokens
    from specx.api import generation
    from specx.engine.prompt import prompt_ids
    from specx.options import RunOptions

    ids = prompt_ids(served.reference.target.tokenizer, msgs)   # the same answer as from empty caches
    alone = "".join(getattr(e, "text", "") for e in generation(served.reference, ids, RunOptions(max_tokens=N)))
    assert second.choices[0].message.content == alone


def test_a_client_that_leaves_mid_stream_frees_the_engine_within_one_round(served):
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({"model": served.model, "prompt": "Once upon a time",
                                                        "max_tokens": 2000, "stream": True}))
    response = conn.getresponse()
    assert response.status == 200 and response.readline().startswith(b"data: ")
    job = served.jobs[-1]
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    deadline = time.monotonic() + 60   # a bound on waiting, not a timing assertion
    while job.done is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job.done.reason == "interrupted" and job.cancelled_after is not None
    assert job.done.stats.rounds <= job.cancelled_after + 1
    assert served.client().completions.create(model=served.model, prompt="Hi", max_tokens=2).choices[0].text


def post(port, path, body: bytes, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body, headers or {})
    response = conn.getresponse()
    return response.status, json.loads(response.read()), response


def test_invalid_requests_get_the_documented_4xx_json(served):
    import openai

    status, body, _ = post(served.port, "/v1/chat/completions", b"{not json")
    assert status == 400 and body["error"]["code"] == "invalid_json"
    status, body, _ = post(served.port, "/v1/chat/completions", b"x" * (9 << 20))
    assert status == 413 and body["error"]["code"] == "body_too_large"
    client, msg = served.client(), [{"role": "user", "content": "Hi"}]
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="gpt-4o", messages=msg)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=served.model, prompt="word " * 9000)
    assert e.value.code == "context_length_exceeded"
    with pytest.raises(openai.AuthenticationError) as e:
        served.client("wrong", served.keyed_port).chat.completions.create(model=served.model, messages=msg)
    assert e.value.code == "invalid_api_key"
    status, body, _ = post(served.keyed_port, "/v1/chat/completions", json.dumps({"model": served.model,
                                                                                  "messages": msg}).encode())
    assert status == 401 and body["error"]["code"] == "invalid_api_key"   # no key at all
    assert served.client("s3cret", served.keyed_port).models.list().data[0].id == served.model


def test_sigterm_finishes_the_answer_refuses_new_ones_and_exits_0(tmp_path):
    """A real `specx serve` process: SIGTERM mid-answer; the answer completes, new requests get 503, exit 0."""
    port = free_port()
    proc = subprocess.Popen(specx_cmd("serve", str(fixture_model("smollm2-135m")), "--port", str(port)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=specx_env(SPECX_HOME=str(tmp_path)))
    try:
        lines = []
        while not any(line.startswith("try: curl") for line in lines):
            line = proc.stderr.readline().decode()
            assert line, "".join(lines)
            lines.append(line)
        model = str(fixture_model("smollm2-135m"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", "/v1/completions", json.dumps({"model": model, "prompt": "Once upon a time",
                                                            "max_tokens": 300, "stream": True}))
        response = conn.getresponse()
        first = response.readline()
        proc.send_signal(signal.SIGTERM)
        while True:   # the handler runs between two rounds of the answer
            status, body, _ = post(port, "/v1/completions", json.dumps({"model": model, "prompt": "Hi"}).encode())
            if status == 503:
                break
        assert body["error"]["code"] == "shutting_down"
        events = [json.loads(line[6:]) for line in (first + response.read()).split(b"\n\n")
                  if line.startswith(b"data: {")]
        assert events[-1]["choices"][0]["finish_reason"] == "length" and events[-1]["usage"]["completion_tokens"] == 300
        assert proc.wait(timeout=60) == 0
        err = proc.stderr.read().decode()
        assert "Traceback" not in err and "SIGTERM" in err
    finally:
        if proc.poll() is None:
            proc.kill()
