"""`specx serve [MODEL]`: an OpenAI-compatible server on one loaded pair; `specx export vllm [MODEL]`:
the `vllm serve` command with the same model and speculation."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, model_flags, output
from .completion import complete_model

EXAMPLES = """\b
Examples:
  specx serve smollm2
  specx serve ./target.gguf --drafter ./drafter.gguf --port 8080
  SPECX_API_KEY=secret specx serve qwen2.5-coder-1.5b --host 0.0.0.0
"""
MODEL_HELP = "A GGUF file, a model folder, a preset or a Hub repo (default: `specx config set model …`); clients name it as given."
HOST_HELP = "Address to listen on; any but a loopback one needs --api-key."


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def serve(
    ctx: typer.Context,
    model: Annotated[Optional[str], typer.Argument(help=MODEL_HELP, autocompletion=complete_model)] = None,
    drafter: model_flags.Drafter = "auto",
    draft_tokens: model_flags.DraftTokens = 4,
    draft_policy: model_flags.DraftPolicy = "auto",
    confidence: model_flags.Confidence = 0.4,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="Most new tokens when a request gives no max_tokens (never past the context).")] = 512,
    dtype: model_flags.Dtype = "auto",
    quant: model_flags.Quant = "auto",
    mem_budget: model_flags.MemBudget = None,
    allow_disk_offload: model_flags.AllowDiskOffload = False,
    moe_offload: model_flags.MoeOffload = False,
    draft_dtype: model_flags.DraftDtype = None,
    draft_quant: model_flags.DraftQuant = "auto",
    draft_vocab: model_flags.DraftVocab = None,
    host: Annotated[str, typer.Option("--host", help=HOST_HELP)] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8000,
    api_key: Annotated[Optional[str], typer.Option("--api-key", envvar="SPECX_API_KEY", show_envvar=True, help="Every request must send `Authorization: Bearer KEY`.")] = None,
) -> None:
    """Serve the OpenAI API (chat, completions, streaming) with speculative decoding, one answer at a time."""
    from ..api import prepare
    from ..errors import UsageError
    from ..serve.server import is_loopback, serve as run_server
    from .defaults import resolve

    if not api_key and not is_loopback(host):
        raise UsageError(f"--host {host} lets other machines in, so it needs an API key",
                         "give --api-key KEY (or set SPECX_API_KEY), or keep the default --host 127.0.0.1")
    options, _ = resolve(ctx, dict(locals()), prompt_param=None, notify=output.note)
    for line in options.notes:
        output.note(line)
    output.note(f"model: {options.model.model}")

    def load():
        pair = prepare(options.model, output.note)   # says the memory plan
        output.note(pair.explanation + (f"; {pair.target.kernels}" if pair.target.kernels else ""))
        return pair

    run_server(load, options.model.model, options.run, host, port, api_key or None, output.note)


EXPORT_EXAMPLES = """\b
Examples:
  specx export vllm qwen2.5-coder-1.5b
  specx export vllm smollm2-135m --drafter ngram -k 6 --host 0.0.0.0
"""
export_app = typer.Typer(help="Print the command that runs this model in another engine.", no_args_is_help=True,
                         rich_markup_mode=None)
app.add_typer(export_app, name="export", epilog=EXPORT_EXAMPLES + "\n" + EXIT_CODES)


@export_app.command("vllm", epilog=EXPORT_EXAMPLES + "\n" + EXIT_CODES)
def export_vllm(
    ctx: typer.Context,
    model: Annotated[Optional[str], typer.Argument(help=MODEL_HELP, autocompletion=complete_model)] = None,
    drafter: model_flags.Drafter = "auto",
    draft_tokens: Annotated[int, typer.Option("--draft-tokens", "-k", show_default=False, help="num_speculative_tokens (default: the tuned k, else the preset's, else 4).")] = 4,
    dtype: model_flags.Dtype = "auto",
    host: Annotated[str, typer.Option("--host", help="vLLM's --host (as `specx serve`'s, so clients move unchanged).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="vLLM's --port.")] = 8000,
) -> None:
    """Print the `vllm serve` command with the same model, drafter and k in vLLM's --speculative-config."""
    from .. import presets
    from ..options import CHOSEN
    from ..policy.policy import DEFAULT_K
    from ..serve.export_vllm import export
    from .defaults import resolve

    options, _ = resolve(ctx, dict(locals()), prompt_param=None, notify=output.note)
    for line in options.notes:
        output.note(line)
    m = options.model
    k = m.k if options.sources.get("k") in CHOSEN else presets.defaults(m.model).get("k", DEFAULT_K)
    output.write_stdout(export(m.model, m.drafter, k, host, port, m.dtype).text())
