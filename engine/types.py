"""Small frozen dataclasses that cross the engine's public boundary."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal, Optional

from .reply.constraint import Constraint
from .errors import InvalidRequestError
from .kv_cache_type import check_kv_cache_type

FinishReason = Literal["stop", "length", "cancelled"]


@dataclass(frozen=True)
class EngineConfig:
    """How to load a model and how many sessions it may serve."""

    backend: str = "auto"
    """"torch", "mlx", "llamacpp" or "auto" (a .gguf on llama.cpp where llama-cpp-python imports;
    folders on MLX on Apple Silicon, else torch)."""
    device: str = "auto"
    """"cuda", "cpu", "metal" or "auto" (the best the backend has)."""
    dtype: str = "auto"
    """"float32", "bfloat16", "float16" or "auto" (torch: bfloat16 where the hardware has it, float16 on
    older CUDA GPUs, float32 on other CPUs; float16 on Metal, float32 on MLX CPU)."""
    max_context: int = 4096
    """Most tokens one session may hold (prompt and reply together)."""
    max_sessions: Optional[int] = None
    """Hard cap on open sessions; None derives it from the memory budget."""
    memory_budget: Optional[int] = None
    """Bytes that session state may use; None takes a safe share of free memory after the weights."""
    prefill_chunk: int = 512
    """Most prompt tokens fed in one forward, so a long prompt never stalls other sessions for long."""
    max_batch: int = 32
    """Most decoding sessions stepped together in one forward; 1 steps one session per forward."""
    quantize: Optional[str] = None
    """Weight format on torch. None: as the source holds them (a GGUF's Q4_0/Q4_1/Q4_K tensors stay
    4-bit, the rest dense); "int4": also quantize a dense folder's linear layers at load (groups of 32);
    "none": everything dense (a GGUF fully dequantized). MLX ignores it."""
    deterministic: bool = False
    """Every session's tokens exactly as if it ran alone, in any dtype, by stepping one session per
    forward: in bfloat16 a batched forward can round differently and flip a near-tie. Costs the
    batching speedup (aggregate tok/s stays that of one session)."""
    speculative: bool = True
    """llama.cpp: draft tokens from each session's own context and check them in the round's joint
    forward (engine/drafts/speculative.py); the same tokens, sooner where replies repeat their context.
    False turns it off for every reply (SamplingParams.speculative turns it off for one)."""
    draft_model: Optional[str] = None
    """llama.cpp: a small .gguf of the same vocabulary (e.g. the 135M of a 1.7B's family) that also
    guesses each reply's next tokens, for the model to check in the same forward
    (engine/drafts/draft_model.py); a source as for Engine.load. None: lookup drafts only."""

    share_prefixes: bool = True
    """llama.cpp: a new turn whose prompt starts with tokens another live session holds shares those
    cells instead of computing them again (engine/prefix_share.py); the same tokens either way."""

    prefix_cache_dir: Optional[str | os.PathLike] = None
    """llama.cpp: a folder where prompts' K/V are kept in blocks (engine/prefix_cache/), so a new turn,
    after a restart too, reads back the longest prefix of its prompt found there instead of computing
    it; the same tokens either way. None: no prompt cache (the app and `serve` give one)."""
    prefix_cache_bytes: int = 4 << 30
    """Most bytes that folder may hold; the least recently used blocks go first. 0 turns the cache off."""

    mmproj: Optional[str] = None
    """llama.cpp: the vision projector (an `mmproj` .gguf) that lets the model read images in messages.
    None: an `mmproj*.gguf` beside the model file, if there is one (how LM Studio and the Hugging Face
    repos lay them out); "": none, the model reads text only. `Engine.takes_images` says the outcome."""

    gpu_layers: Optional[int] = None
    """llama.cpp: how many of the model's layers go on the GPU (its blocks from the last back, then the
    output layer). None: as many as fit beside one session at max_context (llamacpp_offload.py); 0:
    none (the CPU only). Ignored where the llama.cpp build has no GPU."""

    cache_type_k: str = "f16"
    """llama.cpp: the type keys are cached in: "f16", "q8_0" (about half the memory, as fast on the
    CPU) or "q4_0". Other backends keep their dtype. engine/kv_cache_type.py has the measurement."""
    cache_type_v: str = "f16"
    """llama.cpp: the type values are cached in ("f16", "q8_0", "q4_0"); quantized values save memory
    but read long prompts about 30 % slower on the CPU."""

    threads: Optional[int] = None
    """CPU threads that compute (torch on the CPU, llama.cpp). None: the usable physical cores, or
    CONFAB_THREADS where set. torch's count is process-wide: the last engine loaded sets it."""

    def __post_init__(self) -> None:
        for name in ("backend", "device", "dtype"):
            if not isinstance(getattr(self, name), str):
                raise InvalidRequestError(f"{name} must be a string, not {getattr(self, name)!r}")
        for name, optional in (("max_context", False), ("max_sessions", True), ("memory_budget", True),
                               ("prefill_chunk", False), ("max_batch", False)):
            value = getattr(self, name)
            if not (_is_int(value) or optional and value is None):
                raise InvalidRequestError(
                    f"{name} must be an integer{' or None' if optional else ''}, not {value!r}"
                )
        for name in ("deterministic", "speculative", "share_prefixes"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidRequestError(f"{name} must be True or False, not {getattr(self, name)!r}")
        if self.gpu_layers is not None and not (_is_int(self.gpu_layers) and self.gpu_layers >= 0):
            raise InvalidRequestError(f"gpu_layers must be a whole number of layers (0 or more) or None for "
                                      f"as many as fit, not {self.gpu_layers!r}")
        if self.prefix_cache_dir is not None and not isinstance(self.prefix_cache_dir, (str, os.PathLike)):
            raise InvalidRequestError(f"prefix_cache_dir must be a folder path or None, not {self.prefix_cache_dir!r}")
        if not (_is_int(self.prefix_cache_bytes) and self.prefix_cache_bytes >= 0):
            raise InvalidRequestError(f"prefix_cache_bytes must be a whole number of bytes (0 turns the cache off), "
                                      f"not {self.prefix_cache_bytes!r}")
        if self.mmproj is not None and not isinstance(self.mmproj, str):
            raise InvalidRequestError(f"mmproj must be a path string, '' or None, not {self.mmproj!r}")
        if self.threads is not None and not (_is_int(self.threads) and self.threads >= 1):
            raise InvalidRequestError(f"threads must be a whole number (1 or more) or None for as many as "
                                      f"the CPU has cores, not {self.threads!r}")
        if self.draft_model is not None and not isinstance(self.draft_model, str):
            raise InvalidRequestError(f"draft_model must be a source string or None, not {self.draft_model!r}")
        check_kv_cache_type(self.cache_type_k, "cache_type_k")
        check_kv_cache_type(self.cache_type_v, "cache_type_v")
        if self.backend not in ("auto", "torch", "mlx", "llamacpp"):
            raise InvalidRequestError(f"backend must be auto, torch, mlx or llamacpp, not {self.backend!r}")
        if self.device not in ("auto", "cuda", "cpu", "metal"):
            raise InvalidRequestError(f"device must be auto, cuda, cpu or metal, not {self.device!r}")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise InvalidRequestError(f"dtype must be auto, float32, bfloat16 or float16, not {self.dtype!r}")
        if self.quantize not in (None, "int4", "none"):
            raise InvalidRequestError(f"quantize must be None, 'int4' or 'none', not {self.quantize!r}")
        if self.max_context < 16:
            raise InvalidRequestError(f"max_context must be at least 16, not {self.max_context}")
        if self.max_sessions is not None and self.max_sessions < 1:
            raise InvalidRequestError(f"max_sessions must be at least 1, not {self.max_sessions}")
        if self.memory_budget is not None and self.memory_budget <= 0:
            raise InvalidRequestError(f"memory_budget must be positive, not {self.memory_budget}")
        if self.max_batch < 1:
            raise InvalidRequestError(f"max_batch must be at least 1, not {self.max_batch}")
        if self.prefill_chunk < 1:
            raise InvalidRequestError(f"prefill_chunk must be at least 1, not {self.prefill_chunk}")


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each next token. temperature=0 is greedy."""

    temperature: float = 0.7
    """0 picks the most likely token; higher spreads the choice."""
    top_p: float = 1.0
    """Keep the smallest set of tokens whose probability sums to top_p (1.0 keeps all)."""
    top_k: int = 0
    """Keep only the k most likely tokens (0 keeps all)."""
    min_p: float = 0.0
    """Drop tokens less likely than min_p times the most likely one."""
    repetition_penalty: float = 1.0
    """Divide (or multiply, when negative) the logits of tokens among the last `repeat_last_n` of the
    session by this (llama.cpp's repeat_penalty; 1.0 is off)."""
    repeat_last_n: int = 64
    """How many of the session's last tokens (prompt and reply) the three penalties look at, as
    llama.cpp counts them: 0 turns them off, -1 looks at the whole session. End tokens are never
    penalized (every earlier turn holds one: penalized, replies would run on)."""
    presence_penalty: float = 0.0
    """Subtract this from the logit of every token in that window (OpenAI's; -2..2, 0 is off)."""
    frequency_penalty: float = 0.0
    """Subtract this times its count in that window from each token's logit (OpenAI's; -2..2)."""
    max_tokens: int = 512
    """Most tokens to generate for this reply."""
    seed: Optional[int] = None
    """Same seed, same prompt and same params give the same text; None draws a fresh seed."""
    ignore_stop: bool = False
    """Keep generating past end tokens until max_tokens (benchmarks and tests of fixed length)."""
    constraint: Optional[Constraint] = None
    """A grammar the reply must match (e.g. `Constraint.json_schema(schema)`); the reply ends with
    finish reason "stop" as soon as the grammar is complete."""
    logprobs: Optional[int] = None
    """None: no log probabilities. 0: each chunk carries the log probability of each sampled token;
    n (at most MAX_TOP_LOGPROBS): also the n most likely tokens. They are taken from the distribution
    the token was drawn from (after the constraint's mask, penalties, temperature, top-k,
    top-p, min-p); at temperature 0 from the masked, penalized softmax."""
    speculative: bool = True
    """Let the engine draft tokens for this reply and check them in one forward (llama.cpp): the
    same distribution (greedy: the same tokens), sooner where the reply repeats its context.
    False steps one token per forward."""

    def validate(self) -> None:
        """Raise InvalidRequestError naming the first value of the wrong type or out of range.

        Everything is checked here, in the caller's thread, so a bad value never reaches the engine
        thread (where it would fail mid-reply and poison the session).
        """
        for name in ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty",
                     "frequency_penalty"):
            if not _is_real(getattr(self, name)):
                raise InvalidRequestError(f"{name} must be a number, not {getattr(self, name)!r}")
        for name in ("ignore_stop", "speculative"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidRequestError(f"{name} must be True or False, not {getattr(self, name)!r}")
        t = self.temperature
        checks = [
            ("temperature", math.isfinite(t) and t >= 0, "temperature must be >= 0"),
            # below this, logits / temperature overflow: the choice is greedy anyway, so say so
            ("temperature", t == 0 or t >= MIN_TEMPERATURE,
             f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE}"),
            ("top_p", 0.0 < self.top_p <= 1.0, "top_p must be in (0, 1]"),
            ("top_k", _is_int(self.top_k) and self.top_k >= 0, "top_k must be an integer >= 0"),
            ("min_p", 0.0 <= self.min_p < 1.0, "min_p must be in [0, 1)"),
            ("repetition_penalty", math.isfinite(self.repetition_penalty) and self.repetition_penalty > 0,
             "repetition_penalty must be > 0"),
            ("repeat_last_n", _is_int(self.repeat_last_n) and self.repeat_last_n >= -1,
             "repeat_last_n must be an integer >= -1 (-1: the whole session, 0: off)"),
            ("presence_penalty", -MAX_PENALTY <= self.presence_penalty <= MAX_PENALTY,
             f"presence_penalty must be in [-{MAX_PENALTY:g}, {MAX_PENALTY:g}]"),
            ("frequency_penalty", -MAX_PENALTY <= self.frequency_penalty <= MAX_PENALTY,
             f"frequency_penalty must be in [-{MAX_PENALTY:g}, {MAX_PENALTY:g}]"),
            ("max_tokens", _is_int(self.max_tokens) and self.max_tokens >= 1, "max_tokens must be an integer >= 1"),
            ("seed", self.seed is None or _is_int(self.seed), "seed must be an integer or None"),
            ("seed", self.seed is None or not _is_int(self.seed) or 0 <= self.seed < 2**64,
             "seed must be in [0, 2**64)"),
        ]
        for name, ok, message in checks:
            if not ok:  # the value itself, never the whole params object (callers show this to users)
                raise InvalidRequestError(f"{message}, not {getattr(self, name)!r}")
        if self.constraint is not None:
            if not isinstance(self.constraint, Constraint):
                raise InvalidRequestError(f"constraint must be a Constraint or None, not {type(self.constraint).__name__}")
            self.constraint.validate()
        if self.logprobs is not None and not (_is_int(self.logprobs) and 0 <= self.logprobs <= MAX_TOP_LOGPROBS):
            raise InvalidRequestError(f"logprobs must be None or an integer in [0, {MAX_TOP_LOGPROBS}], not {self.logprobs!r}")


MIN_TEMPERATURE = 1e-4
"""Smallest temperature above 0 that is accepted."""
MAX_PENALTY = 2.0
"""Largest presence or frequency penalty, either sign (OpenAI's range)."""
MAX_TOP_LOGPROBS = 20
"""Most alternatives a token's log probabilities may list (OpenAI's limit)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class GenerationStats:
    """Figures of one finished reply, carried by its last chunk."""

    prompt_tokens: int
    """Tokens in the prompt of this turn (all of them, cached or not)."""
    prefilled_tokens: int
    """Prompt tokens that were actually run through the model (the rest were resident already)."""
    generated_tokens: int
    """Tokens sampled for the reply, the end token included."""
    ttft_s: float
    """Seconds from the request to its first sampled token."""
    decode_tok_s: float
    """Tokens per second after the first one."""
    constraint_s: float = 0.0
    """Seconds the constraint's grammar took on the engine thread (masks and advancing); 0 without one."""
    drafted_tokens: int = 0
    """Tokens drafted for this reply and checked by the model (speculative decoding); 0 without."""
    accepted_tokens: int = 0
    """Of those, tokens the reply took: each saved a forward of its own."""


@dataclass(frozen=True)
class Chunk:
    """One piece of a streamed reply."""

    text: str
    """New text; may be empty while a multi-byte character is incomplete."""
    token_ids: tuple[int, ...]
    """Token ids sampled for this piece (an end token appears here, never in text)."""
    finish_reason: Optional[FinishReason] = None
    """None until the last chunk: "stop", "length" or "cancelled"."""
    stats: Optional[GenerationStats] = None
    """Set on the last chunk only."""
    prefill: Optional[tuple[int, int]] = None
    """Progress of a long prompt: (tokens read so far, tokens to read in all), on an otherwise empty
    chunk sent after each prefill forward while prompt tokens remain; None on every other chunk."""
    logprobs: tuple["TokenLogprob", ...] = ()
    """One per token of `token_ids` when SamplingParams.logprobs is set; empty otherwise."""
    reasoning: str = ""
    """New reasoning text: what a thinking model (Qwen3, DeepSeek-R1, SmolLM3, gpt-oss) writes
    before its answer, with its tags removed; `text` then holds only the answer. "" for models that
    do not think and for replies of `Session.generate` (raw continuations are not split)."""


@dataclass(frozen=True)
class TokenLogprob:
    """How likely a sampled token was, and its most likely alternatives."""

    token_id: int
    logprob: float
    """Natural log of its probability (-inf where the mask or a filter had removed it)."""
    top: tuple[tuple[int, float], ...] = ()
    """(token id, log probability) of the most likely tokens, most likely first."""


@dataclass(frozen=True)
class Reply:
    """A whole reply, as `Stream.reply()` gives it."""

    text: str
    """The answer."""
    reasoning: str
    """The reasoning before it ("" when the model did not think)."""
    finish_reason: Optional[FinishReason]
    stats: Optional[GenerationStats]


@dataclass(frozen=True)
class Capacity:
    """What the engine can hold, in bytes and sessions."""

    weights_bytes: int
    """Bytes of the loaded weights."""
    bytes_per_session: int
    """Estimated state bytes of one session filled to max_context."""
    max_sessions: int
    """Sessions that may be open at once."""
    live_sessions: int
    """Sessions open now."""
    budget_bytes: int
    """Bytes set aside for session state."""
    pool_tokens: int = 0
    """Tokens the shared K/V pool holds (llama.cpp: sessions share one pool, admitted by tokens held
    and reserved); 0 where each session has its own state."""
    held_tokens: int = 0
    """Tokens all open sessions hold now."""
