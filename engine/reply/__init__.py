"""From a conversation to tokens, and from tokens back to a reply: what a turn says and how it reads.

- `text`: the chat template, end tokens and streaming detokenizing (the same tokenizer on every backend).
- `reasoning`: which format a model thinks in, and the splitter that keeps thinking apart from the answer.
- `toolcalls`, `toolstream`: tools into the template, a forced call's grammar, and calls read back out
  of the reply, whole or while it streams.
- `constraint`: the grammar (llguidance) that masks a session's logits: JSON schema, forced tool calls.
- `sampling`, `logprobs`: the next token from float32 logits, and the log probabilities it was drawn with.

Threads: templates and parsing run on the caller's thread (a session's `chat`, the server's request
handlers); sampling, constraint masks and logprobs run on the engine's thread, inside the step loop.
No torch or mlx here: numpy, the Hugging Face tokenizer and llguidance.
"""
