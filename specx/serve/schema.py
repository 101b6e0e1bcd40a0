"""OpenAI requests → what the engine needs (messages or a prompt, RunOptions), and every refusal as an
OpenAI-style error (status, message, type, param, code). Pure: no server, no model.

Rules: a field specx cannot honour exactly (n > 1, penalties, logprobs, tools) is refused, never
ignored, so a reply never pretends; fields that change nothing (user, metadata, …) are accepted.
Sampling goes through options.RunOptions, as `specx run`'s does, so one request gives `specx run`'s
text. A chat request's system message is RunOptions.system (as `--system`); a completion's prompt is
raw text (as `--raw`)."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from ..engine.types import Sampling
from ..errors import SpecxError
from ..options import RunOptions

MAX_STOPS = 4   # OpenAI's limit on `stop` strings
ROLES = ("system", "developer", "user", "assistant")   # developer: OpenAI's newer name for system
REFUSED = {   # field → the value that changes nothing (anything else is refused)
    "n": 1, "presence_penalty": 0, "frequency_penalty": 0, "logprobs": None, "top_logprobs": None,
    "logit_bias": None, "tools": None, "functions": None, "best_of": 1, "echo": False, "suffix": None,
    "response_format": None,
}


class ApiError(Exception):
    """A refused request: an HTTP status and the OpenAI error object."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code)


@dataclass(frozen=True)
class Request:
    """One checked request: chat `messages` (no system message) or a raw completion `prompt`."""

    kind: str                      # "chat" | "completion"
    run: RunOptions
    stream: bool = False
    include_usage: bool = False    # stream_options.include_usage: a last chunk with usage and no choices
    messages: tuple = ()
    prompt: str = ""


def parse_json(raw: bytes) -> dict:
    """The body as a JSON object, else 400."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"the body is not valid JSON: {e}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad("the body must be a JSON object", code="invalid_json")
    return body


def check_model(body: dict, served: str) -> None:
    """`model` must name the one served model (404 otherwise, as OpenAI answers an unknown model)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad("`model` is required: the id `GET /v1/models` lists", param="model")
    if model != served:
        raise ApiError(404, f"the model {model!r} does not exist here; this server serves {served!r}",
                       param="model", code="model_not_found")


def parse_chat(body: dict, served: str, defaults: RunOptions) -> Request:
    check_model(body, served)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("`messages` must be a non-empty list", param="messages")
    system, turns = None, []
    for i, m in enumerate(messages):
        role, text = _message(m, i)
        if role in ("system", "developer"):
            if turns or system is not None:
                raise bad("one system message, first, is supported", param=f"messages[{i}]")
            system = text
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[-1]["role"] != "user":
        raise bad("the last message must be the user's", param="messages")
    run = _run(body, replace(defaults, system=system, raw=False), "max_completion_tokens")
    return Request("chat", run, *_stream(body), messages=tuple(turns))


def parse_completion(body: dict, served: str, defaults: RunOptions) -> Request:
    check_model(body, served)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str) or not prompt.strip():
        raise bad("`prompt` must be one non-empty string", param="prompt")
    run = _run(body, replace(defaults, system=None, raw=True))
    return Request("completion", run, *_stream(body), prompt=prompt)


def _message(m, i: int) -> tuple[str, str]:
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        raise bad(f"messages[{i}] needs a role ({', '.join(ROLES)}) and content", param=f"messages[{i}]")
    content = m.get("content")
    if isinstance(content, list):   # content parts: text only
        if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                   for p in content):
            raise bad("only text content parts are supported", param=f"messages[{i}].content")
        content = "".join(p["text"] for p in content)
    if not isinstance(content, str):
        raise bad(f"messages[{i}].content must be a string", param=f"messages[{i}].content")
    return m["role"], content


def _stream(body: dict) -> tuple[bool, bool]:
    stream = _typed(body, "stream", bool, False)
    options = _typed(body, "stream_options", dict, None) or {}
    return stream, bool(options.get("include_usage")) and stream


def _run(body: dict, defaults: RunOptions, *length_names: str) -> RunOptions:
    """RunOptions from the request's fields over the server's defaults, checked as `specx run` checks them."""
    for name, neutral in REFUSED.items():
        if body.get(name, neutral) not in (neutral, None):
            raise bad(f"`{name}` is not supported: specx answers one lossless completion", param=name,
                      code="unsupported_parameter")
    max_tokens = defaults.max_tokens
    for name in ("max_tokens", *length_names):
        max_tokens = _typed(body, name, int, max_tokens)
    s = defaults.sampling
    sampling = Sampling(_number(body, "temperature", s.temperature), _typed(body, "top_k", int, s.top_k) or None,
                        _number(body, "top_p", s.top_p), _typed(body, "seed", int, s.seed))
    try:
        return replace(defaults, max_tokens=max_tokens, sampling=sampling, stop=_stops(body, defaults.stop))
    except SpecxError as e:   # limits.check: out of range
        raise bad(e.message) from None


def _stops(body: dict, default: tuple[str, ...]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return default
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(x, str) and x for x in stops) or len(stops) > MAX_STOPS:
        raise bad(f"`stop` must be a non-empty string or a list of at most {MAX_STOPS}", param="stop")
    return tuple(stops)


def _typed(body: dict, name: str, kind: type, default):
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise bad(f"`{name}` must be {'an integer' if kind is int else 'a ' + kind.__name__}", param=name)
    return value


def _number(body: dict, name: str, default):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad(f"`{name}` must be a number", param=name)
    return float(value)
