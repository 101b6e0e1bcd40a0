"""Run the server: the engine's thread, the app, and uvicorn with a drain on SIGTERM/SIGINT.

The first SIGTERM (or Ctrl-C) refuses new requests with 503, lets the answers already accepted
finish, then stops uvicorn: the process exits 0. A second Ctrl-C stops at once."""
from __future__ import annotations

import signal
from collections.abc import Callable

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return host in LOOPBACK or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(app, engine, host: str, port: int, say: Callable[[str], None] = lambda text: None,
                ready: Callable[[], None] = lambda: None):
    """A uvicorn Server whose exit waits for the engine to drain (uvicorn's own exit would re-raise
    the signal after shutdown, ending the process with -15 instead of 0); `ready` runs once it listens."""
    import uvicorn

    class Draining(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started:
                ready()

        def handle_exit(self, sig, frame) -> None:
            if engine.draining and sig == signal.SIGINT:   # a second Ctrl-C: now
                self.should_exit = self.force_exit = True
            elif not engine.draining:
                say(f"{signal.Signals(sig).name}: answering the requests accepted, refusing new ones (503), then exiting")
            engine.drain()

        async def on_tick(self, counter: int) -> bool:
            if engine.draining and engine.idle:
                self.should_exit = True
            return await super().on_tick(counter)

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=5, lifespan="off")
    return Draining(config)


def serve(load: Callable[[], object], model: str, defaults, host: str, port: int, api_key: str | None,
          say: Callable[[str], None]) -> None:
    """Serve the pair `load` makes (on the engine's thread: worker.py says why) until SIGTERM/SIGINT
    (drained), saying where on stderr."""
    from . import app as app_module
    from .metrics import Metrics
    from .worker import Engine

    metrics = Metrics(model)
    engine = Engine(metrics=metrics, load=load).start()

    def ready() -> None:
        say(f"serving on {url(host, port)}  (OpenAI API at {url(host, port)}/v1; SIGTERM or Ctrl-C drains and exits)")
        say("try: " + curl(host, port, model, api_key is not None))

    server = make_server(app_module.build(engine, model, defaults, api_key, metrics), engine, host, port, say, ready)
    try:
        server.run()
    except SystemExit:   # uvicorn's exit when it cannot bind
        if server.started:
            raise
    finally:
        engine.close()
    if not server.started:   # uvicorn said why (the port is taken, the address is not this machine's)
        from ..errors import UsageError

        raise UsageError(f"cannot listen on {host}:{port}", "pick another --port, or a --host of this machine")


def url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else \
        f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def curl(host: str, port: int, model: str, keyed: bool) -> str:
    """One request that works as printed (the key is read from SPECX_API_KEY, never echoed)."""
    import json
    import shlex

    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Say hello"}], "max_tokens": 32})
    key = ' -H "Authorization: Bearer $SPECX_API_KEY"' if keyed else ""
    return (f"curl -s {url(host, port)}/v1/chat/completions -H 'Content-Type: application/json'{key} "
            f"-d {shlex.quote(body)}")
