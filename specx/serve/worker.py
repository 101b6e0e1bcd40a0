"""The engine behind the server: one loaded pair, answers made one at a time in arrival order.

Requests wait in a bounded FIFO queue (full: 503 with Retry-After); one thread runs the engine, so
the models and their KV caches are never shared between two answers. The caches survive between
answers: a request whose prompt starts with what they hold (a conversation resent with one more turn)
prefills only the rest (engine/session.py: reusable, as `specx chat` does). A client that leaves sets
its job's stop event: the answer ends after the round under way, or is skipped if still waiting.
Draining (SIGTERM): new requests are refused with 503, accepted ones are answered.

The engine's thread also loads the pair (`load`), so every kernel runs on that one thread and the main
thread (uvicorn's) never starts an OpenMP team: once two threads have, libgomp counts more threads than
cores and cuts its spin-waiting, and each kernel call on a 2-core machine took twice as long (served 0.62×
`specx run`'s speed, 1.0× with the load moved here: benchmarks/results/2026-11-26-serve)."""
from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..engine.types import Done
from .schema import ApiError, Request

QUEUE_SIZE = 32            # waiting requests; more get 503 (each costs memory only for its prompt)
RETRY_AFTER_MAX_S = 60     # the Retry-After of a 503 estimates the wait, within 1 s … this


@dataclass
class Job:
    """One request on its way through the engine; `deliver` hands each event to the request's task."""

    request: Request
    ids: list[int]
    run: object                                # RunOptions, max_tokens capped by the context
    deliver: Callable[[object], None]
    stop: threading.Event = field(default_factory=threading.Event)
    reused: int = 0                            # prompt tokens found in the caches
    queued_at: float = field(default_factory=time.perf_counter)
    stats: object = None                       # the running answer's engine Stats, once it started
    cancelled_after: int | None = None         # rounds made when the client left
    done: Done | None = None

    def cancel(self) -> None:
        """The client left: the answer ends after the round under way (Generation checks `stop` after
        each round it counts)."""
        if self.cancelled_after is None and self.done is None:
            self.cancelled_after = self.stats.rounds if self.stats is not None else 0
        self.stop.set()


class Started:
    """The first event of a job: the engine took it (the wait in the queue is over)."""


class Engine:
    def __init__(self, pair=None, metrics=None, queue_size: int = QUEUE_SIZE, load: Callable[[], object] | None = None):
        self.pair, self.metrics, self.load = pair, metrics, load   # load: makes the pair on the engine's thread
        self.loaded, self.failure = threading.Event(), None
        self.jobs: queue.Queue[Job | None] = queue.Queue(queue_size)
        self.cached: list[int] = []          # a prefix of both caches' contents (session.ChatSession.cached)
        self.running: Job | None = None
        self.draining = False
        self.answered = 0
        self.busy_s = 0.0                    # engine seconds over all answers: the Retry-After estimate
        self.thread = threading.Thread(target=self._loop, name="specx-engine", daemon=True)

    def start(self) -> "Engine":
        """Start the engine's thread; with `load`, once the pair is loaded (its error raised here)."""
        self.thread.start()
        if self.load is not None:
            self.loaded.wait()
            if self.failure is not None:
                raise self.failure
        return self

    # ---- the request side (the event loop's thread) --------------------------------------------

    def job(self, request: Request, deliver: Callable[[object], None]) -> Job:
        """Tokenize and check a request (400 when its prompt does not fit), then queue it (503 when full)."""
        from ..engine.prompt import prompt_ids
        from ..errors import SpecxError

        if self.draining:
            raise ApiError(503, "the server is shutting down", type="server_error", code="shutting_down")
        tokenizer, r = self.pair.target.tokenizer, request.run
        try:
            ids = prompt_ids(tokenizer, list(request.messages) or request.prompt, r.system, r.raw)
        except SpecxError as e:
            raise ApiError(400, e.message) from None
        room = self.pair.context - len(ids)
        if room <= 0:
            raise ApiError(400, f"the prompt has {len(ids)} tokens but the context holds {self.pair.context}",
                           param="messages" if request.kind == "chat" else "prompt", code="context_length_exceeded")
        job = Job(request, ids, replace(r, max_tokens=min(r.max_tokens, room)), deliver)
        try:
            self.jobs.put_nowait(job)
        except queue.Full:
            raise ApiError(503, f"{self.jobs.maxsize} requests are already waiting", type="server_error",
                           code="queue_full", headers={"Retry-After": str(self.retry_after())}) from None
        self._gauges()
        return job

    def retry_after(self) -> int:
        """Seconds until the queue has room, from the mean answer time so far."""
        mean = self.busy_s / self.answered if self.answered else 1.0
        return max(1, min(RETRY_AFTER_MAX_S, math.ceil(mean * max(1, self.jobs.qsize() // 2))))

    def drain(self) -> None:
        """Refuse new requests; the ones accepted are still answered."""
        self.draining = True

    @property
    def idle(self) -> bool:
        return self.running is None and self.jobs.empty()

    def close(self) -> None:
        self.jobs.put(None)

    # ---- the engine's thread --------------------------------------------------------------------

    def _loop(self) -> None:
        if self.load is not None:
            try:
                self.pair = self.load()
            except BaseException as e:  # noqa: BLE001  (raised again by start, on the caller's thread)
                self.failure = e
                return
            finally:
                self.loaded.set()
        while (job := self.jobs.get()) is not None:
            self.running = job
            self._gauges()
            try:
                if not job.stop.is_set():   # a client that left while waiting costs nothing
                    self._answer(job)
            except Exception as e:  # noqa: BLE001  (the request gets a 500 body; the server goes on)
                self.cached = []
                job.deliver(e)
            finally:
                self.running = None
                self._gauges()

    def _answer(self, job: Job) -> None:
        from ..api import generation
        from ..engine.session import reusable

        job.reused = reusable(job.ids, self.cached)
        job.deliver(Started())
        start = time.perf_counter()
        events = generation(self.pair, job.ids, job.run, stop_event=job.stop, reuse=job.reused)
        job.stats, job.reused = events.stats, events.reuse   # as far as the caches hold them
        committed, self.cached = list(job.ids), []   # not trusted until the answer ends cleanly
        for event in events:
            if isinstance(event, Done):
                job.done, self.cached = event, committed
                self.answered += 1
                self.busy_s += time.perf_counter() - start
                if self.metrics:
                    self.metrics.answered(event, time.perf_counter() - job.queued_at)
            else:
                committed.extend(event.token_ids)
            job.deliver(event)

    def _gauges(self) -> None:
        if self.metrics:
            self.metrics.queue(1 if self.running else 0, self.jobs.qsize())
