"""`specx serve`: the OpenAI-compatible HTTP server (one model pair, one answer at a time) and
`specx export vllm`. Starlette, uvicorn and prometheus_client are imported only where a server runs."""
