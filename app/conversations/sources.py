"""The passages of a conversation's library that one reply reads: found for the user's question,
fitted into the context under the conversation's policy, put before the question, and stored with
the reply as its sources.

    messages = library_turn(engine, store, embedder_for, cid, reply_id, messages, params, top=5)

Finding: the question's vector against every passage's (numpy, `store.library.matrix`) and its words
against FTS5's BM25 (`store.library.word_ranking`), the two rankings fused by reciprocal rank
(`engine.hybrid`). Fitting: passages in rank order while they fit in `SHARE` of the context and, for
a conversation that refuses to cut, in what the history leaves; a policy that drops old messages
makes room for them instead (`context_policy.fit` runs after this).

The passages go into the last user message of this turn only, never into the stored text: a later
turn reads the earlier question without them (the engine re-reads from that message on; a history
carrying every turn's passages would fill the context in a few turns), while a Continue or a tool
step of the same reply reads them again from its stored sources (`with_sources`).
Runs on the store's thread; the question is embedded on the embedder's own thread.
"""

from __future__ import annotations

import html
from typing import Callable, Optional

import numpy as np

from app.store import Source, Store
from engine import AnyEngine, Embedder, EngineError, SamplingParams, hybrid, truncation

from .context_policy import policy_of

TOP = 5
"""Passages a reply reads at most (the "More passages" button asks for `MORE`)."""
MORE = 10
POOL = 50
"""How deep each ranking is read before fusing."""
SHARE = 0.5
"""Share of the model's context the passages may take at most."""
NOT_SEARCHED = "The library was not searched for this reply: {why}"
NONE_FIT = "No passage of the library fit in what is left of the model's context; the reply read none."


def search(store: Store, embedder: Embedder, conversation_id: int, question: str, top: int = TOP) -> list[Source]:
    """The conversation's `top` passages for `question`, best first (hybrid: vectors and BM25, fused)."""
    ids, vectors = store.library.matrix(conversation_id, embedder.source)
    if not len(ids):
        return []
    position = {int(chunk_id): n for n, chunk_id in enumerate(ids)}
    word_scores = np.zeros(len(ids))
    for chunk_id, score in store.library.word_ranking(conversation_id, question, POOL):
        if chunk_id in position:
            word_scores[position[chunk_id]] = score
    query = embedder.embed([question], truncate=True).vectors[0]
    hits = hybrid(query, vectors, word_scores, top=top, pool=POOL)
    found = {p.id: p for p in store.library.passages([int(ids[h.index]) for h in hits])}
    return [Source.of(found[int(ids[h.index])], h.score) for h in hits if int(ids[h.index]) in found]


def library_turn(engine: AnyEngine, store: Store, embedder_for: Callable[[], Optional[Embedder]],
                 conversation_id: int, message_id: int, messages: list[dict], params: Optional[SamplingParams],
                 top: int = TOP) -> list[dict]:
    """`messages` with the passages that fit before the last user message's text; they are stored
    as reply `message_id`'s sources. The embedding model (`embedder_for()`; None: no libraries) is
    asked for only when the conversation has a library to search; one that cannot be had or
    loaded (not on this computer, not enough memory) is said on the reply, which goes on without."""
    question = _text_of(_last_user(messages))
    if not question.strip() or not store.library.searchable(conversation_id):
        return messages
    try:
        embedder = embedder_for()
        if embedder is None:
            return messages
        found = search(store, embedder, conversation_id, question, top)
    except EngineError as e:
        store.set_notice(message_id, NOT_SEARCHED.format(why=e))
        return messages
    count, count_messages = _counters(engine)
    room = _room(engine, store, conversation_id, messages, params, count_messages)
    chosen = choose(found, room, count)
    if found and not chosen:
        store.set_notice(message_id, NONE_FIT)
    store.library.add_sources(message_id, chosen)
    return with_sources(messages, chosen)


def choose(found: list[Source], room: Optional[int], count: Callable[[str], int]) -> list[Source]:
    """The first passages, in rank order, whose block fits in `room` tokens (None: no limit known)."""
    chosen: list[Source] = []
    for source in found:
        if room is not None and count(sources_block([*chosen, source])) > room:
            break
        chosen.append(source)
    return chosen


def sources_block(sources: list[Source]) -> str:
    """The passages as the model reads them, numbered, each naming where it comes from."""
    items = [f'<source n="{i}" from="{html.escape(s.label)}">\n{s.text.strip()}\n</source>'
             for i, s in enumerate(sources, 1)]
    return ("<sources note=\"passages from this conversation's documents; use them where they answer the "
            "question, and say which [n] you used\">\n" + "\n".join(items) + "\n</sources>")


def with_sources(messages: list[dict], sources: tuple[Source, ...] | list[Source]) -> list[dict]:
    """`messages` whose last user message has `sources` before its text (unchanged without any)."""
    index = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None)
    if not sources or index is None:
        return messages
    block, message = sources_block(list(sources)), messages[index]
    content = message["content"]
    if isinstance(content, str):
        content = f"{block}\n\n{content}" if content else block
    else:  # parts (images first): the passages go in front of the text
        content = [p for p in content if p.get("type") != "text"] + [
            {"type": "text", "text": "\n\n".join([block, *(p["text"] for p in content if p.get("type") == "text")])}]
    return [*messages[:index], {**message, "content": content}, *messages[index + 1:]]


def _last_user(messages: list[dict]) -> Optional[dict]:
    return next((m for m in reversed(messages) if m["role"] == "user"), None)


def _text_of(message: Optional[dict]) -> str:
    if message is None:
        return ""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def _counters(engine: AnyEngine) -> tuple[Callable[[str], int], Callable[[list[dict]], int]]:
    """The model's own token counts where it has them; else four characters a token."""
    if getattr(engine, "counts_tokens", False) and hasattr(engine, "chat_tokens"):
        return engine.count_tokens, lambda messages: len(engine.chat_tokens(messages))
    estimate = lambda text: (len(text) + 3) // 4  # noqa: E731
    return estimate, lambda messages: sum(estimate(_text_of(m)) + 4 for m in messages)


def _room(engine: AnyEngine, store: Store, conversation_id: int, messages: list[dict],
          params: Optional[SamplingParams], count_messages: Callable[[list[dict]], int]) -> Optional[int]:
    """Tokens the passages may take: `SHARE` of the context, less what the latest message needs
    (it is never cut); for a conversation that refuses to cut, less the whole history."""
    limit = engine.max_context
    if not limit:
        return None
    reserve = truncation.reply_room(limit, params.max_tokens if params is not None else None)
    latest = [m for m in messages if m["role"] == "system"] + [_last_user(messages)]
    room = min(int(limit * SHARE), limit - reserve - count_messages(latest))
    if policy_of(store.get_conversation(conversation_id).sampling) == "refuse":
        room = min(room, limit - reserve - count_messages(messages))
    return max(0, room)
