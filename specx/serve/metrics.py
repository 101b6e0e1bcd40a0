"""`GET /metrics`: Prometheus text through prometheus_client, in a registry of the server's own (no
process-wide state, so two servers in one process never mix counts).

Names follow vLLM's (prefix `specx:` where vLLM writes `vllm:`), so a dashboard built for one reads
the other: the spec-decode counters of vLLM's V1 engine (num_drafts, num_draft_tokens,
num_accepted_tokens) and its earlier num_emitted_tokens, request latency, time to first token,
prompt and generation tokens, requests running and waiting; plus specx's decode tokens per second.
Source: https://docs.vllm.ai/en/stable/design/metrics.html"""
from __future__ import annotations

PREFIX = "specx:"
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160)   # seconds: a token … a long answer
RATE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)                  # tokens per second


class Metrics:
    def __init__(self, model: str):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        disable_created_metrics()   # the `_created` timestamp series double the output and no dashboard reads them
        self.registry = r = CollectorRegistry()
        labels, self.model = ["model_name"], model

        def counter(name, text, extra=()):
            return Counter(PREFIX + name, text, labels + list(extra), registry=r)

        self.drafts = counter("spec_decode_num_drafts", "Rounds that verified a draft.")
        self.draft_tokens = counter("spec_decode_num_draft_tokens", "Draft tokens proposed.")
        self.accepted = counter("spec_decode_num_accepted_tokens", "Draft tokens the target accepted.")
        self.emitted = counter("spec_decode_num_emitted_tokens", "Tokens emitted (accepted drafts + the target's own).")
        self.prompt_tokens = counter("prompt_tokens", "Prompt tokens of answered requests.")
        self.generation_tokens = counter("generation_tokens", "Tokens generated.")
        self.success = counter("request_success", "Answered requests by finish reason.", ["finished_reason"])
        self.latency = Histogram(PREFIX + "e2e_request_latency_seconds", "Arrival to last token, queue included.",
                                 labels, buckets=LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram(PREFIX + "time_to_first_token_seconds", "Engine start to first token.", labels,
                              buckets=LATENCY_BUCKETS, registry=r)
        self.rate = Histogram(PREFIX + "request_decode_tokens_per_second", "Decode tokens per second of each answer.",
                              labels, buckets=RATE_BUCKETS, registry=r)
        self.running = Gauge(PREFIX + "num_requests_running", "Requests the engine is answering.", labels, registry=r)
        self.waiting = Gauge(PREFIX + "num_requests_waiting", "Requests waiting in the queue.", labels, registry=r)

    def answered(self, done, latency_s: float) -> None:
        """Fold one finished answer (its engine Done event) in."""
        s, m = done.stats, self.model
        self.drafts.labels(m).inc(s.drafted_at[0] if s.drafted_at else 0)   # rounds that proposed a first token
        self.draft_tokens.labels(m).inc(s.drafted)
        self.accepted.labels(m).inc(s.accepted)
        self.emitted.labels(m).inc(s.new_tokens)
        self.prompt_tokens.labels(m).inc(s.prompt_tokens)
        self.generation_tokens.labels(m).inc(s.new_tokens)
        self.success.labels(m, done.reason).inc()
        self.latency.labels(m).observe(latency_s)
        if s.first_token_s is not None:
            self.ttft.labels(m).observe(s.first_token_s)
        if s.decode_tok_s:
            self.rate.labels(m).observe(s.decode_tok_s)

    def queue(self, running: int, waiting: int) -> None:
        self.running.labels(self.model).set(running)
        self.waiting.labels(self.model).set(waiting)

    def text(self) -> tuple[bytes, str]:
        """The exposition and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST
