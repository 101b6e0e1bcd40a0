"""Requests → RunOptions and refusals, replies' wire format, the API key, the queue: no server, no model."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from specx.engine.types import Sampling, Stats
from specx.options import RunOptions
from specx.serve import replies, schema
from specx.serve.schema import ApiError

MODEL = "smollm2"
DEFAULTS = RunOptions(max_tokens=100, sampling=Sampling(top_k=7), draft_policy="fixed", stop=("END",))


def chat(**fields):
    return schema.parse_chat({"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], **fields}, MODEL,
                             DEFAULTS)


def refused(call, status: int = 400) -> ApiError:
    with pytest.raises(ApiError) as e:
        call()
    assert e.value.status == status and set(e.value.body()["error"]) == {"message", "type", "param", "code"}
    return e.value


def test_a_chat_request_becomes_run_options_over_the_server_defaults():
    """Request fields override the server's RunOptions; the rest (policy, top_k, stops) stay; system → system."""
    r = schema.parse_chat({"model": MODEL, "max_tokens": 9, "temperature": 0.7, "top_p": 0.9, "seed": 3,
                           "messages": [{"role": "system", "content": "Be terse."},
                                        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                           "stream": True, "stream_options": {"include_usage": True}, "user": "ignored"},
                          MODEL, DEFAULTS)
    assert r.messages == ({"role": "user", "content": "Hi"},) and r.run.system == "Be terse." and not r.run.raw
    assert r.run.sampling == Sampling(0.7, 7, 0.9, 3) and r.run.max_tokens == 9 and r.run.stop == ("END",)
    assert r.run.draft_policy == "fixed" and r.stream and r.include_usage
    assert chat(max_completion_tokens=5, stop="x").run.max_tokens == 5 and chat(stop="x").run.stop == ("x",)
    assert chat().run == DEFAULTS.__class__(**{**DEFAULTS.__dict__, "system": None})


def test_a_completion_is_raw_text():
    """A completion's prompt is not templated (as `specx run --raw`); a one-string list is that string."""
    r = schema.parse_completion({"model": MODEL, "prompt": ["def f():"]}, MODEL, DEFAULTS)
    assert r.prompt == "def f():" and r.run.raw and r.run.system is None and not r.stream


@pytest.mark.parametrize("fields, param", [
    ({"n": 2}, "n"), ({"presence_penalty": 0.5}, "presence_penalty"), ({"logprobs": True}, "logprobs"),
    ({"max_tokens": "9"}, "max_tokens"), ({"max_tokens": True}, "max_tokens"), ({"temperature": "hot"}, "temperature"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"), ({"stop": [""]}, "stop"), ({"stream": "yes"}, "stream"),
    ({"messages": []}, "messages"), ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}, "messages"),
])
def test_a_field_specx_cannot_honour_is_a_400_naming_it(fields, param):
    assert refused(lambda: chat(**fields)).param == param


def test_out_of_range_sampling_is_refused_as_specx_run_refuses_it():
    """RunOptions' own checks (state/limits.py) give the message."""
    assert "temperature" in refused(lambda: chat(temperature=-1)).message
    assert "max tokens" in refused(lambda: chat(max_tokens=0)).message


def test_unknown_model_is_404_and_malformed_json_is_400():
    e = refused(lambda: chat(model="gpt-4"), 404)
    assert (e.code, e.param) == ("model_not_found", "model")
    assert refused(lambda: schema.parse_json(b"{bad")).code == "invalid_json"
    assert refused(lambda: schema.parse_json(b"[1]")).code == "invalid_json"
    assert refused(lambda: schema.parse_completion({"model": MODEL, "prompt": "  "}, MODEL, DEFAULTS)).param == "prompt"


def test_the_api_key_is_checked_on_every_request():
    from specx.serve.app import check_key

    def request(header=None):
        return SimpleNamespace(headers={"authorization": header} if header else {})

    check_key(request(), None)
    check_key(request("Bearer s3cret"), "s3cret")
    for header in (None, "Bearer wrong", "s3cret", "Basic s3cret"):
        assert refused(lambda: check_key(request(header), "s3cret"), 401).code == "invalid_api_key"


def stats(**kw) -> Stats:
    s = Stats(prompt_tokens=5, new_tokens=3, rounds=2, drafted=4, accepted=2, k=4, drafter="ngram",
              draft_policy="auto", decode_s=0.5, first_token_s=0.1, drafted_at=[1, 1], accepted_at=[1, 1])
    for name, value in kw.items():
        setattr(s, name, value)
    return s


def events(data: bytes) -> list:
    assert data.endswith(replies.DONE)
    return [json.loads(part[6:]) for part in data.split(b"\n\n") if part and part != replies.DONE.strip()]


def test_a_stream_is_openai_chunks_ending_in_done_with_usage_and_specx_stats():
    r = replies.Reply("chat", MODEL)
    data = r.first() + r.piece("Hel") + r.piece("lo") + r.last("context", stats(), reused=2, include_usage=True)
    chunks = events(data)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1]) == "Hello"
    final, usage_only = chunks[-2], chunks[-1]
    assert final["choices"][0]["finish_reason"] == "length" and final["usage"]["total_tokens"] == 8
    assert final["specx"]["acceptance_rate"] == 0.5 and final["specx"]["reused_prompt_tokens"] == 2
    assert usage_only["choices"] == [] and usage_only["usage"] == final["usage"]
    assert {c["id"] for c in chunks} == {r.id} and {c["object"] for c in chunks} == {"chat.completion.chunk"}


def test_a_whole_completion_reply():
    body = replies.Reply("completion", MODEL).whole("x = 1", "eos", stats())
    assert body["object"] == "text_completion" and body["choices"][0]["text"] == "x = 1"
    assert body["choices"][0]["finish_reason"] == "stop" and body["usage"]["completion_tokens"] == 3


class FakePair:
    """What the engine's request side reads: the tokenizer and the context."""

    def __init__(self, context: int):
        from conftest import word_tokenizer

        self.target, self.context = SimpleNamespace(tokenizer=word_tokenizer()), context


def completion(prompt: str, max_tokens: int = 50) -> schema.Request:
    return schema.parse_completion({"model": MODEL, "prompt": prompt, "max_tokens": max_tokens}, MODEL, DEFAULTS)


def test_a_full_queue_is_503_with_retry_after_and_a_long_prompt_400():
    from specx.serve.worker import Engine

    engine = Engine(FakePair(context=8), queue_size=1)   # not started: jobs stay queued
    job = engine.job(completion("w5 w6", max_tokens=50), lambda item: None)
    assert job.run.max_tokens == 8 - len(job.ids)        # capped by the context
    e = refused(lambda: engine.job(completion("w5"), lambda item: None), 503)
    assert e.code == "queue_full" and int(e.headers["Retry-After"]) >= 1
    e = refused(lambda: Engine(FakePair(context=4)).job(completion("w5 w6 w7 w8 w9"), lambda item: None))
    assert e.code == "context_length_exceeded"
    engine.drain()
    assert refused(lambda: engine.job(completion("w5"), lambda item: None), 503).code == "shutting_down"


def test_a_job_whose_client_left_while_waiting_is_skipped():
    """The engine never starts an answer nobody waits for."""
    from specx.serve.worker import Engine

    engine = Engine(FakePair(context=64))
    got = []
    job = engine.job(completion("w5"), got.append)
    job.cancel()
    engine.start()
    engine.close()
    engine.thread.join(timeout=10)
    assert got == [] and job.done is None and engine.idle


def test_the_engine_loads_its_pair_on_its_own_thread_and_raises_a_load_error_to_the_caller():
    """`load` runs on the engine's thread (so the kernels' OpenMP team is that thread's alone: worker.py), start
    returns once it has; a load that fails raises on the caller's thread."""
    import threading

    from specx.errors import UsageError
    from specx.serve.worker import Engine

    where = []
    engine = Engine(load=lambda: where.append(threading.current_thread()) or FakePair(context=8)).start()
    assert where == [engine.thread] and engine.pair.context == 8
    engine.close()
    with pytest.raises(UsageError, match="no such model"):
        Engine(load=lambda: (_ for _ in ()).throw(UsageError("no such model", "pull it"))).start()
