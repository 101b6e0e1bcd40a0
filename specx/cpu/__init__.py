"""CPU kernels and what they run on: GGUF weight blocks (qweight), specx's compiled kernels."""
