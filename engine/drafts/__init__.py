"""Speculative decoding inside llama.cpp's joint round: guess a session's next tokens, check them in
the same forward as every other session's step, keep what the sampler agrees with.

- `lookup`: prompt-lookup drafts from a session's own context (prompt and reply so far).
- `speculative`: how many drafts each session may add to a round, verification row by row through
  the worker's own sampling, and the rollback of rejected cells.

Threads: everything here runs on the engine's own thread, inside the step loop (engine/together.py).
"""
