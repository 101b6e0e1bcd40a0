"""Models: resolving a name or path, presets' sources, the Hub, the model cache, GGUF checks, loading (transformers' models or specx's lean decoder)."""
