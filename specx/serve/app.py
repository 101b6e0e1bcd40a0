"""The HTTP surface (Starlette): routes, the API key, the body limit, and every refusal as OpenAI's
JSON error with a 4xx/5xx status (never a traceback).

Routes: GET /v1/models, POST /v1/chat/completions, POST /v1/completions (streamed as server-sent
events or whole), GET /health, GET /metrics. With a key, every route wants `Authorization: Bearer KEY`
(compared in constant time)."""
from __future__ import annotations

import asyncio
import hmac
import time

from ..engine.types import Done
from . import replies, schema
from .schema import ApiError

MAX_BODY = 8 << 20   # bytes: a prompt as long as the largest contexts (~1M characters) fits, a flood does not


def build(engine, model: str, defaults, api_key: str | None = None, metrics=None):
    """The ASGI app for one engine; `defaults`: the RunOptions a request's fields override."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import Response
    from starlette.routing import Route

    created = int(time.time())

    async def guarded(request, handler):
        try:
            check_key(request, api_key)
            return await handler(request)
        except ApiError as e:
            return error_response(e)

    async def models(request):
        return await guarded(request, lambda r: _json(replies.models(model, created)))

    async def health(request):   # 503 while draining: a load balancer stops sending requests here
        return await guarded(request, lambda r: _json({"status": "draining" if engine.draining else "ok",
                                                       "model": model, "waiting": engine.jobs.qsize(),
                                                       "running": engine.running is not None},
                                                      503 if engine.draining else 200))

    async def metrics_route(request):
        async def show(r):
            body, kind = metrics.text()
            return Response(body, media_type=kind)
        return await guarded(request, show)

    def answering(parse):
        async def route(request):
            async def handler(r):
                body = schema.parse_json(await read_body(r))
                return await answer(r, engine, parse(body, model, defaults), model)
            return await guarded(request, handler)
        return route

    async def http_error(request, exc):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        return error_response(ApiError(exc.status_code, str(exc.detail), code=code))

    async def server_error(request, exc):
        return error_response(internal(exc))

    routes = [Route("/v1/models", models, methods=["GET"]), Route("/health", health, methods=["GET"]),
              Route("/v1/chat/completions", answering(schema.parse_chat), methods=["POST"]),
              Route("/v1/completions", answering(schema.parse_completion), methods=["POST"])]
    if metrics is not None:
        routes.append(Route("/metrics", metrics_route, methods=["GET"]))
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: server_error})


async def _json(obj: dict, status: int = 200):
    from starlette.responses import JSONResponse

    return JSONResponse(obj, status_code=status)


def error_response(e: ApiError):
    from starlette.responses import JSONResponse

    return JSONResponse(e.body(), status_code=e.status, headers=e.headers)


def internal(exc: BaseException) -> ApiError:
    """An engine failure, said in one line (a SpecxError's own message; otherwise its type)."""
    from ..errors import SpecxError

    text = exc.message if isinstance(exc, SpecxError) else f"the engine failed ({type(exc).__name__})"
    return ApiError(500, text, type="server_error", code="internal_error")


def check_key(request, api_key: str | None) -> None:
    if api_key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), api_key.encode()):
        raise ApiError(401, "a valid API key is required: `Authorization: Bearer KEY`" if given else
                       "no API key given: send `Authorization: Bearer KEY`", code="invalid_api_key")


async def read_body(request) -> bytes:
    """The body, refused (413) past MAX_BODY, whether or not Content-Length says so."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY:
        raise ApiError(413, f"the body is larger than {MAX_BODY >> 20} MiB", code="body_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, f"the body is larger than {MAX_BODY >> 20} MiB", code="body_too_large")
        chunks.append(chunk)
    return b"".join(chunks)


async def answer(request, engine, parsed: schema.Request, model: str):
    """Queue the request, then stream its events out or gather them into one reply."""
    loop, events = asyncio.get_running_loop(), asyncio.Queue()

    def deliver(item) -> None:   # from the engine's thread
        try:
            loop.call_soon_threadsafe(events.put_nowait, item)
        except RuntimeError:     # the loop is gone (shutdown): nobody is listening
            pass

    job = engine.job(parsed, deliver)
    reply = replies.Reply(parsed.kind, model)
    if parsed.stream:
        return EventStream(sse(job, events, reply, parsed.include_usage), job)
    return await whole(request, job, events, reply)


async def until_done(events: asyncio.Queue):
    """The job's engine events, Started … Done; an engine failure raises here."""
    from .worker import Started

    while True:
        item = await events.get()
        if isinstance(item, BaseException):
            raise item
        if not isinstance(item, Started):
            yield item
        if isinstance(item, Done):
            return


async def whole(request, job, events, reply):
    """The non-streamed reply; a client that leaves meanwhile stops the answer (its job's stop event)."""
    watcher = asyncio.ensure_future(_watch(request.receive, job))
    try:
        parts = []
        try:
            async for event in until_done(events):
                if isinstance(event, Done):
                    return await _json(reply.whole("".join(parts), event.reason, event.stats, job.reused))
                parts.append(event.text)
        except Exception as e:  # noqa: BLE001
            raise internal(e) from None
    finally:
        watcher.cancel()


async def _watch(receive, job) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    job.cancel()


async def sse(job, events, reply, include_usage: bool):
    """The streamed reply: the role chunk once the engine takes the job, one chunk per round with text,
    then the finishing chunk and [DONE]; an engine failure mid-stream is one error event."""
    try:
        started = False
        async for event in until_done(events):
            if not started and reply.kind == "chat":
                yield reply.first()
            started = True
            if isinstance(event, Done):
                yield reply.last(event.reason, event.stats, job.reused, include_usage)
            elif event.text:
                yield reply.piece(event.text)
    except Exception as e:  # noqa: BLE001
        yield replies.error_event(internal(e).body())


def EventStream(chunks, job):
    """A StreamingResponse that stops the job as soon as the client disconnects, whichever ASGI version
    the server speaks (Starlette's own notices a disconnect only on the next write under ASGI 2.4)."""
    from starlette.responses import StreamingResponse

    class _Stream(StreamingResponse):
        async def __call__(self, scope, receive, send):
            watcher = asyncio.ensure_future(_watch(receive, job))
            try:
                await self.stream_response(send)
            except OSError:   # the client is gone
                pass
            finally:
                watcher.cancel()
                job.cancel()   # harmless once the answer is done

    return _Stream(chunks, media_type="text/event-stream",
                   headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
