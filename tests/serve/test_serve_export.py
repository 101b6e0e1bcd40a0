"""`specx export vllm` against vLLM's documented --speculative-config keys, metrics exposition, loopback rule."""
from __future__ import annotations

import json
import shlex

import pytest

from cli_helpers import invoke

# vLLM's SpeculativeConfig keys that specx writes, as documented: the method names and fields in
# https://docs.vllm.ai/en/stable/api/vllm/config/speculative/ , and their use in
# https://docs.vllm.ai/en/latest/features/speculative_decoding/draft_model/ and .../n_gram/
VLLM_SPECULATIVE_CONFIG = {
    "type": "object",
    "properties": {
        "method": {"enum": ["ngram", "draft_model", "eagle", "eagle3", "medusa", "mlp_speculator", "mtp", "suffix"]},
        "model": {"type": "string", "minLength": 1},
        "num_speculative_tokens": {"type": "integer", "minimum": 1},
        "prompt_lookup_max": {"type": "integer", "minimum": 1},
        "prompt_lookup_min": {"type": "integer", "minimum": 1},
    },
    "required": ["method", "num_speculative_tokens"],
    "additionalProperties": False,
    "allOf": [{"if": {"properties": {"method": {"const": "draft_model"}}}, "then": {"required": ["model"]}},
              {"if": {"properties": {"method": {"const": "ngram"}}},
               "then": {"required": ["prompt_lookup_max", "prompt_lookup_min"], "not": {"required": ["model"]}}}],
}


def exported(*args: str) -> tuple[list[str], dict | None, list[str]]:
    result = invoke("export", "vllm", *args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    argv = shlex.split(lines[-1])
    config = json.loads(argv[argv.index("--speculative-config") + 1]) if "--speculative-config" in argv else None
    return argv, config, lines[:-1]


@pytest.mark.parametrize("args, method", [(["qwen2.5-coder-1.5b"], "draft_model"),
                                          (["smollm2-135m", "-d", "ngram", "-k", "6"], "ngram"),
                                          (["qwen2.5-coder-1.5b", "-d", "qwen2.5-coder-0.5b+ngram"], "draft_model")])
def test_the_speculative_config_has_only_vllms_documented_keys(args, method):
    import jsonschema

    argv, config, comments = exported(*args)
    jsonschema.validate(config, VLLM_SPECULATIVE_CONFIG)
    assert config["method"] == method and argv[:2] == ["vllm", "serve"]
    assert any(line.startswith("# follows https://docs.vllm.ai/") for line in comments)


def test_the_command_runs_the_same_model_drafter_and_k_under_the_same_name():
    """A preset → its Hub repo, its drafter → the drafter's repo, served under specx's model id and address."""
    from specx.drafters.ngram import MAX_N

    argv, config, _ = exported("qwen2.5-coder-1.5b", "--host", "0.0.0.0", "--port", "9000")
    assert argv[2] == "Qwen/Qwen2.5-Coder-1.5B-Instruct"
    assert argv[argv.index("--served-model-name") + 1] == "qwen2.5-coder-1.5b"
    assert (argv[argv.index("--host") + 1], argv[argv.index("--port") + 1]) == ("0.0.0.0", "9000")
    assert config == {"method": "draft_model", "model": "Qwen/Qwen2.5-Coder-0.5B-Instruct", "num_speculative_tokens": 4}
    assert exported("smollm2-135m", "-d", "ngram", "-k", "6")[1]["prompt_lookup_max"] == MAX_N
    assert exported("smollm2-135m", "-d", "none")[1] is None and exported("smollm2-135m", "-k", "0")[1] is None


def test_metrics_use_vllms_names_in_a_registry_of_their_own():
    from specx.engine.types import Done, Stats
    from specx.serve.metrics import Metrics

    first, second = Metrics("m"), Metrics("m")   # two servers in one process never share counts
    done = Done("eos", Stats(prompt_tokens=5, new_tokens=7, rounds=4, drafted=6, accepted=4, decode_s=0.5,
                             drafted_at=[3, 2, 1], accepted_at=[2, 1, 1], first_token_s=0.1))
    first.answered(done, 0.8)
    text = first.text()[0].decode()
    for line in ('specx:spec_decode_num_drafts_total{model_name="m"} 3.0',
                 'specx:spec_decode_num_draft_tokens_total{model_name="m"} 6.0',
                 'specx:spec_decode_num_accepted_tokens_total{model_name="m"} 4.0',
                 'specx:spec_decode_num_emitted_tokens_total{model_name="m"} 7.0',
                 'specx:request_success_total{finished_reason="eos",model_name="m"} 1.0',
                 'specx:e2e_request_latency_seconds_count{model_name="m"} 1.0'):
        assert line in text
    assert "num_draft_tokens_total{" not in second.text()[0].decode()


def test_a_non_loopback_host_needs_an_api_key(monkeypatch):
    """Refused before any model loads (exit 2), with the way out in the hint."""
    from specx.serve.server import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    monkeypatch.delenv("SPECX_API_KEY", raising=False)
    result = invoke("serve", "smollm2", "--host", "0.0.0.0")
    assert result.exit_code == 2 and "SPECX_API_KEY" in result.stderr
