"""specx's own runtime: GGUF and safetensors weights as the file holds them, a lean decoder."""
