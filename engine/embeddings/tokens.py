"""An embedding model's tokenizer, usable from any thread (the `tokenizers` library is thread-safe):
inputs are counted and checked on the caller's thread, before anything is queued for the model.

Token-id inputs are the text's own tokens, as OpenAI's API means them: the model's special tokens
([CLS] … [SEP] for BERT) are added around them exactly as around a text's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence, Union

from ..errors import ContextOverflowError, InvalidRequestError

Input = Union[str, Sequence[int]]


Encode = Callable[[list[str], bool], list[list[int]]]
"""encode(texts, with_special_tokens) -> each text's ids."""


def folder_encoder(folder: Path) -> tuple[Encode, int]:
    """A folder's tokenizer.json through the `tokenizers` library: (encode, vocabulary size)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    # Saved folders often carry a truncation/padding setting (MiniLM's: 128); the engine pads per
    # batch and refuses or cuts at the model's window itself.
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def encode(texts: list[str], special: bool) -> list[list[int]]:
        return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=special)]

    return encode, tokenizer.get_vocab_size()


def gguf_encoder(path: Path) -> tuple[Encode, int]:
    """A GGUF's own vocabulary through llama.cpp (loaded vocabulary only): (encode, vocabulary size)."""
    import llama_cpp

    vocab = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)

    def encode(texts: list[str], special: bool) -> list[list[int]]:
        return [vocab.tokenize(t.encode("utf-8"), add_bos=special, special=False) for t in texts]

    return encode, vocab.n_vocab()


class EmbeddingTokenizer:
    """Turns inputs into the token ids the model reads, and refuses those it cannot read."""

    def __init__(self, encode: Encode, vocab_size: int, window: int, name: str) -> None:
        self._encode = encode
        self.window = window
        self.name = name
        self.vocab_size = vocab_size
        self.prefix, self.suffix = self._specials()

    def _specials(self) -> tuple[list[int], list[int]]:
        """The special tokens before and after a text's own (found around a one-word probe)."""
        bare, full = self._encode(["a"], False)[0], self._encode(["a"], True)[0]
        for start in range(len(full) - len(bare) + 1):
            if full[start:start + len(bare)] == bare:
                return full[:start], full[start + len(bare):]
        return [], []

    @property
    def room(self) -> int:
        """Text tokens one input may hold once the special tokens are added."""
        return self.window - len(self.prefix) - len(self.suffix)

    def text_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's own tokens (no special tokens)."""
        return self._encode(list(texts), False)

    def count(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text costs as one input, special tokens included."""
        extra = len(self.prefix) + len(self.suffix)
        return [len(ids) + extra for ids in self.text_ids(texts)]

    def prepare(self, inputs: Sequence[Input], truncate: bool = False) -> tuple[list[list[int]], tuple[int, ...]]:
        """(the ids the model reads for each input, the indices of inputs cut to fit the window).

        Raises InvalidRequestError for an empty input or a token id outside the vocabulary, and
        ContextOverflowError, with the numbers, for an input longer than the window unless `truncate`."""
        texts = {i: x for i, x in enumerate(inputs) if isinstance(x, str)}
        encoded = dict(zip(texts, self.text_ids(list(texts.values())))) if texts else {}
        ready, cut = [], []
        for i, item in enumerate(inputs):
            ids = encoded[i] if i in encoded else self._check_ids(i, item)
            if not ids:
                raise InvalidRequestError(f"input {i} is empty: there is nothing to embed")
            if len(ids) > self.room:
                if not truncate:
                    raise ContextOverflowError(
                        f"input {i} is {len(ids) + self.window - self.room} tokens; {self.name} reads at most "
                        f"{self.window} per input; split it, or ask for truncate to embed its first {self.window}")
                ids = ids[:self.room]
                cut.append(i)
            ready.append([*self.prefix, *ids, *self.suffix])
        return ready, tuple(cut)

    def _check_ids(self, index: int, ids: Sequence[int]) -> list[int]:
        ids = list(ids)
        bad = next((t for t in ids if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < self.vocab_size),
                   None)
        if bad is not None:
            raise InvalidRequestError(
                f"input {index}: token id {bad!r} is not in {self.name}'s vocabulary (0-{self.vocab_size - 1}); "
                "token ids must come from this model's tokenizer (a client that tokenizes with tiktoken, such as "
                "LangChain's OpenAIEmbeddings by default, should send text: check_embedding_ctx_length=False)")
        return ids
