"""Engine: one loaded model, one engine thread with its own compute stream, many sessions.

Callers on any thread queue functions for the engine thread (`_post`, `_call`); the thread runs them
between rounds of forward passes. No executor or stream is global: two engines never share either.
The thread lives in a `Runner` that never refers back to the Engine, so a dropped Engine is closed
by its finalizer and its weights are freed.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
import weakref
from pathlib import Path
from typing import Callable, Optional

from . import backends, capacity, image_prompt
from .reply import toolcalls
from .capacity import text_config
from .reply.constraint import Constraint, Guides
from .errors import DraftModelError, DraftModelFileError, EngineError, InvalidRequestError, ModelLoadError
from .models import ModelFolder, resolve
from .models.sources import locate
from .runner import Runner
from .session import Session
from .reply.text import TextCodec
from .types import Capacity, EngineConfig
from .worker import Worker

log = logging.getLogger(__name__)
Progress = Callable[[float, str], None]


class Engine:
    """A loaded model serving isolated sessions. Create it with `Engine.load`."""

    can_save_state = True
    """Sessions can be saved to disk and restored (a remote engine cannot: it resends the history)."""
    is_local = True
    """Runs in this process (the app may serve it on its local API)."""
    counts_tokens = True
    """`count_tokens` gives the model's exact count (a remote engine has no tokenizer here)."""

    def __init__(self, source: str, config: EngineConfig, progress: Optional[Progress]) -> None:
        if not isinstance(config, EngineConfig):
            raise InvalidRequestError(f"config must be an EngineConfig, not {type(config).__name__}")
        self.source = source
        self.config = config
        self._ids = itertools.count(1)
        self._vision = None
        self._images_reason = ""
        # Not started yet: Engine.load starts it once it can stop it again on any exception.
        self._runner = Runner(f"confab-engine-{id(self):x}", lambda: _load(source, config, progress))
        # A dropped engine stops its thread; posting a stop never waits, so it is safe from the GC.
        self._finalizer = weakref.finalize(self, self._runner.stop)
        self._finalizer.atexit = False  # at interpreter exit the daemon thread simply ends

    @classmethod
    def load(cls, source: str, config: Optional[EngineConfig] = None, progress: Optional[Progress] = None) -> "Engine":
        """Load `source` on a new engine thread and wait until it is ready.

        source: "bundled:smollm2-135m-instruct", a Hugging Face or MLX folder, or a .gguf file.
        progress(fraction, message) is called from the engine thread while loading.
        Raises ModelLoadError with a readable message when the model cannot be loaded, CapacityError
        when the memory budget cannot hold one session. A failed or interrupted load leaves no
        thread running and no weights held (an interrupted one frees them once loading returns).
        """
        if not isinstance(source, (str, Path)):
            raise InvalidRequestError(f"source must be a string or a path, not {type(source).__name__}")
        engine = cls(str(source), config if config is not None else EngineConfig(), progress)
        try:
            engine._runner.start()  # inside the try: a Ctrl+C from here on stops the thread
            engine._runner.loaded.result()
        except BaseException:
            engine.close(wait=False)  # interrupted (Ctrl+C): the thread ends as soon as the load returns
            raise
        worker = engine._runner.worker
        if worker is not None:
            engine.config, engine._codec = worker.config, worker.codec
            engine._vocab_size, engine.load_seconds = worker.vocab_size, worker.load_seconds
            engine._guides = Guides(worker.codec.tokenizer, worker.vocab_size)
            engine._vision = getattr(worker.backend, "vision", None)
            engine._images_reason = getattr(worker.backend, "images_reason", "") or (
                f"images are read on llama.cpp, with the model's mmproj file; this model runs on {worker.backend.name}")
        return engine

    # -- facts -------------------------------------------------------------------------------------
    @property
    def _worker(self) -> Worker:
        """The engine thread's worker; EngineError, by name, once the engine is closed or failed."""
        worker = self._runner.worker
        if worker is None:
            if self._runner.loaded.done() or not self._runner.running:
                raise self._runner.error()
            raise EngineError("the engine is still loading")
        return worker

    @property
    def closed(self) -> bool:
        """True once close() was called or the engine stopped on its own (see `failure`)."""
        return not self._runner.running

    @property
    def failure(self) -> Optional[str]:
        """Why the engine stopped on its own (failed load, internal error); None otherwise."""
        return self._runner.failure

    @property
    def backend(self) -> str:
        return self._worker.backend.name

    @property
    def backend_reason(self) -> str:
        """Which backend runs and why, in one line: e.g. "llama.cpp: a GGUF file runs as stored", or
        why a GGUF fell back to torch ("torch: llama-cpp-python does not import (...)")."""
        return self._worker.backend_reason

    @property
    def draft_model(self) -> str:
        """The draft model's name and weight format when one guesses tokens (EngineConfig.draft_model), else ""."""
        model = getattr(self._worker, "draft_model", None)
        return model.describe() if model is not None else ""

    @property
    def kernel_check(self):
        """llama.cpp: the kernel path the model runs on and what the load-time probe found (an
        `engine.correctness.kernels.KernelCheck`; its `note` is "" unless the check failed); else None."""
        return getattr(self._worker.backend, "kernel_check", None)

    @property
    def device(self) -> str:
        return self._worker.backend.device

    @property
    def placement(self) -> str:
        """llama.cpp on a GPU: the card and the layers on it ("RTX 4070 · 31/31 layers"); "" on the CPU
        and on torch or MLX (whose `device` says it all)."""
        placement = getattr(self._worker.backend, "placement", None)
        return placement.describe() if placement is not None else ""

    @property
    def placement_reason(self) -> str:
        """llama.cpp: why that many layers are on the GPU ("the whole model fits the GPU (31/31
        layers)"), or why none is ("this llama.cpp is built for CUDA but found no GPU: …"); "" elsewhere."""
        placement = getattr(self._worker.backend, "placement", None)
        return placement.why if placement is not None else ""

    @property
    def dtype(self) -> str:
        return self._worker.backend.dtype

    @property
    def max_context(self) -> int:
        """Most tokens one session may hold (after clamping to the model's own limit)."""
        return self.config.max_context

    @property
    def dtype_reason(self) -> str:
        """Why `dtype`, in one line: e.g. "float32: this CPU has no native bfloat16 (AVX2)"."""
        return getattr(self._worker.backend, "dtype_reason", "") or f"{self.dtype}: as the backend loads"

    @property
    def quantized(self) -> str:
        """Which weights are held 4-bit, e.g. "int4: 210 of 211 linear layers"; "" when none."""
        return getattr(self._worker.backend, "quantized", "")

    @property
    def model(self) -> ModelFolder:
        return self._worker.model

    @property
    def label(self) -> str:
        """Which engine and model, for the window and each stored reply: the model's name (a
        remote engine's label adds its server: "NAME @ host:port")."""
        return self.model.name

    @property
    def model_fingerprint(self) -> str:
        """Identifies the weights; saved states record it and refuse other models."""
        return self._worker.model.fingerprint

    @property
    def template_fingerprint(self) -> str:
        """Identifies the chat template; a change means cached token prefixes may no longer match."""
        return self._codec.template_fingerprint

    def chat_tokens(self, messages: list[dict], continue_final: bool = False,
                    tools: Optional[list[dict]] = None, thinking: Optional[bool] = None) -> list[int]:
        """The token ids a fresh session's `chat(messages, tools=tools, thinking=thinking)` prefills: the
        chat template's markers as control tokens, message content (tool results too) as text,
        markers typed in it included. An image part gives its span: the model's text around it and
        one negative id per position, made from a hash of its bytes (engine/images.py), so two
        prompts share a prefix through an image only where it is the same image."""
        codec = self._codec
        messages, images = image_prompt.flatten(messages)
        rendered = codec.render_traced(messages, continue_final=continue_final, tools=tools, thinking=thinking)
        return image_prompt.encode(codec, rendered, 0, images, self._vision, self._images_reason)[0]

    @property
    def shares_prefixes(self) -> bool:
        """Whether a new session's prompt shares the cells of a prefix another live session holds
        instead of computing it again (llama.cpp with EngineConfig.share_prefixes; engine/prefix_share.py)."""
        return self.config.share_prefixes and hasattr(self._worker.backend, "share_prefix")

    @property
    def takes_images(self) -> bool:
        """Whether messages may hold images (`engine.image_part`): a llama.cpp model with its vision
        projector (EngineConfig.mmproj, or an mmproj*.gguf beside the model)."""
        return self._vision is not None

    @property
    def images_reason(self) -> str:
        """Whether and how the model takes images, or why not, in one line: "images through
        mmproj-model.gguf (found beside the model)", "no mmproj*.gguf beside model.gguf: …"."""
        return self._images_reason

    @property
    def prefix_cache_reason(self) -> str:
        """Whether and where prompts are cached on disk (EngineConfig.prefix_cache_dir) and how full
        that is, or why not, in one line: "on: /path (0.42 of 4.0 GiB used)", "off: …"."""
        cache = self._worker.prefix_cache  # read from this thread: two numbers, at worst a block behind
        return f"on: {cache.describe()}" if cache is not None else self._worker.prefix_cache_reason

    @property
    def tool_format(self) -> str:
        """How this model writes tool calls ("hermes", "llama3" or "mistral"), read from its template."""
        return self._codec.tool_format

    def render_chat(self, messages: list[dict], tools: Optional[list[dict]] = None) -> str:
        """The prompt text `Session.chat` would feed for `messages` and `tools` (for counting tokens); an
        image part shows as a marker (count its tokens with `chat_tokens`)."""
        return self._codec.render(image_prompt.flatten(messages)[0], tools=tools)

    def tool_constraint(self, tools: list[dict], parallel: bool = True) -> Constraint:
        """A constraint that admits only calls of `tools` (OpenAI-shaped) in this model's format, with
        arguments valid for each function's schema: `tool_choice` "required" or a named function."""
        toolcalls.check_tools(tools)
        if not tools:
            raise InvalidRequestError("a tool constraint needs at least one tool")
        special = {t: i for t, i in self.tokenizer.get_vocab().items()
                   if t in ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
                   and t in self.tokenizer.all_special_tokens}
        return toolcalls.call_constraint(self.tool_format, tools, parallel, special)

    @property
    def reasoning(self) -> str:
        """How the model writes reasoning before its answer: "think" (`<think>` tags: Qwen3,
        DeepSeek-R1, SmolLM3), "channels" (gpt-oss) or "none"; read from its chat template."""
        return self._codec.reasoning.kind

    @property
    def thinking_switch(self) -> bool:
        """Whether `Session.chat(thinking=...)` changes anything: the template has a Think switch
        (`enable_thinking`, or gpt-oss's `reasoning_effort`). The app hides its switch otherwise."""
        return self._codec.reasoning.switch is not None

    @property
    def tokenizer(self):
        """The Hugging Face tokenizer (thread-safe for encode/decode)."""
        return self._codec.tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens `text` takes in this model's prompt, exactly (its tokenizer, no special tokens
        added; as a chat message, the template adds a few around it).

        Safe from any thread and never waits on the engine thread: it only runs the tokenizer,
        through the text codec every backend shares, which serializes encodes with a lock (see
        `TextCodec`). It works after `close()` too (the tokenizer is not the model), so a file
        being counted while the app switches models still gets its figure. Cost grows with the text (about a second per few MB on a CPU core), so
        count what could fit rather than a whole large file, and never on a GUI thread.

            engine.count_tokens("Hello, world")  # 4 with SmolLM2's tokenizer
        """
        if not isinstance(text, str):
            raise InvalidRequestError(f"text must be a string, not {type(text).__name__}")
        return len(self._codec.encode(text)) if text else 0

    def capacity(self) -> Capacity:
        w = self._worker
        return Capacity(
            weights_bytes=w.backend.weights_nbytes,
            bytes_per_session=w.per_session,
            max_sessions=w.max_sessions,
            live_sessions=len(w.slots),
            budget_bytes=w.budget,
            pool_tokens=w.pool.tokens if w.pool is not None else 0,
            held_tokens=w.held_tokens(),
        )

    # -- sessions ----------------------------------------------------------------------------------
    def open_session(self, restore_from: Optional[str | Path] = None) -> Session:
        """A new isolated session; CapacityError past max_sessions, StateFileError for a bad state file."""
        if restore_from is not None and not isinstance(restore_from, (str, Path)):
            raise InvalidRequestError(f"restore_from must be a path, not {type(restore_from).__name__}")
        session = Session(self, next(self._ids))
        path = Path(restore_from) if restore_from is not None else None
        self._call(lambda w: w.open_session(session, path))
        session._watch(self._runner.post_quietly)
        return session

    def close(self, wait: bool = True) -> None:
        """Cancel every reply, free every state and the weights, and stop the engine thread. Idempotent.

        Requests racing it end either with their result or with EngineError("the engine is closed").
        """
        self._finalizer.detach()
        self._runner.stop()
        thread = self._runner.thread
        if wait and thread.ident is not None and thread is not threading.current_thread():
            thread.join()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the route to the engine thread ------------------------------------------------------------
    @property
    def _running(self) -> bool:
        return self._runner.running

    @property
    def _thread(self) -> threading.Thread:
        return self._runner.thread

    def _post(self, fn: Callable[[Worker], object]):
        """Queue `fn(worker)` for the engine thread; its result or error lands in the Future."""
        return self._runner.post(fn)

    def _call(self, fn: Callable[[Worker], object]):
        """Run `fn(worker)` on the engine thread and wait for its result (re-raising its error)."""
        return self._runner.call(fn)


def _load(source: str, config: EngineConfig, progress: Optional[Progress]) -> Worker:
    """Runs on the engine thread. A module function, so the thread never holds the Engine."""
    report = progress or (lambda fraction, message: None)
    started = time.perf_counter()
    report(0.0, f"resolving {source}")
    choice, reason = backends.choose(config.backend, locate(source)[0])
    model = resolve(source, progress=lambda f, m: report(0.5 * f, m), as_stored=choice == "llamacpp")
    capacity.check_config(model.config, model.name)
    config = _fit_context(config, model)
    backend = backends.create(choice, config.device, config.dtype, config.quantize, config)
    report(0.5, f"loading {model.name} with {backend.name}")
    try:
        backend.load(model.path, model.config)
        warm_up = getattr(backend, "warm_up", None)
        if warm_up is not None:  # e.g. CUDA graphs of the decode step, before free memory is measured
            warm_up(config.max_context, config.max_batch, lambda f, m: report(0.9 + 0.1 * f, m))
        codec = TextCodec(model.tokenizer_folder)
        worker = Worker(backend, codec, model, config)
        if config.draft_model:
            report(0.95, f"loading the draft model {config.draft_model}")
            worker.draft_model = _load_draft(config, backend, choice)
        check = getattr(backend, "kernel_check", None)  # llama.cpp's load-time kernel check
        worker.backend_reason = reason + (f"; {check.note}" if check is not None and check.note else "")
    except BaseException:
        backend.close()  # this thread's library state goes now, not in the thread's exit
        raise
    worker.vocab_size = int(text_config(model.config).get("vocab_size") or len(codec.tokenizer))
    worker.load_seconds = time.perf_counter() - started
    report(1.0, f"loaded {model.name} in {worker.load_seconds:.1f} s")
    return worker


def _load_draft(config: EngineConfig, backend, choice: str):
    """The draft model beside `backend` (engine/drafts/draft_model.py); ModelLoadError, saying why,
    where it cannot draft: another backend than llama.cpp, a folder, another vocabulary."""
    if choice != "llamacpp":
        raise DraftModelError(f"a draft model runs beside a model on llama.cpp (a .gguf file); this model "
                              f"runs on {choice}")
    from .drafts.draft_model import DraftModel

    try:
        kind, path, name = locate(config.draft_model)
    except ModelLoadError as e:
        raise DraftModelFileError(f"the draft model: {e}") from None
    if kind != "gguf":
        raise DraftModelFileError(f"the draft model must be a .gguf file, not the folder {path.name}")
    return DraftModel.load(path, name, backend, config)


def _fit_context(config: EngineConfig, model: ModelFolder) -> EngineConfig:
    """Clamp max_context to the model's own limit, saying so: positions past it are untrained."""
    limit = capacity.model_context_limit(model.config)
    if limit is None or config.max_context <= limit:
        return config
    log.warning(
        "max_context %d is above %s's limit of %d tokens (max_position_embeddings); using %d",
        config.max_context, model.name, limit, limit,
    )
    return dataclasses.replace(config, max_context=limit)
