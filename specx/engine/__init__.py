"""The speculative engine: the loop, what a drafter proposes, sampling, verification, detokenizing, chat sessions."""
