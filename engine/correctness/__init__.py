"""Right before fast: does this machine compute the model's logits right?

- `cpu_features`: what the CPU can do, as the operating system reports it (AVX2, AVX-512, AMX…).
- `kernels`: which of llama.cpp's CPU kernel paths a model runs on (AMX / repack / plain), the policy
  that keeps it off a path known to be wrong, and the probe at load that falls back to the plain path
  when one call and one-token pieces disagree.
- `reference`: a backend's logits for one prompt prefilled in one call, in pieces and in a joint
  batch, against each other and against a float32 torch forward of the same weights.

Threads: the load-time probe and the reference comparisons run on the engine's own thread (they
forward the model); `python -m engine check` (engine/cli/check.py) calls them from the main thread
through the engine, and computes the float32 torch reference there.
"""
