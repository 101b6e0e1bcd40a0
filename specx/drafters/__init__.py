"""Drafters: a smaller model, the n-gram lookup, the hybrid, the `auto` pick, tokenizer compatibility."""
