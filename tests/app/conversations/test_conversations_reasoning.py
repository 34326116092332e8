"""A thinking model's reply through the manager: the reasoning is stored apart from the answer,
sent back only as the template asks, continued inside the reasoning when cut there, and the
conversation's Think switch reaches the model."""

from __future__ import annotations

from app.conversations import ConversationManager, chat_messages
from engine import SamplingParams
from tests.app.engine_fixtures import make_engine  # noqa: F401 (fixture)
from tests.engine.helpers import with_template

CUT = SamplingParams(temperature=0, max_tokens=6, ignore_stop=True)


def manager_for(make_engine, tiny_models, store, tmp_path, family):
    folder = with_template(tiny_models["llama"], tmp_path / family, family)
    return ConversationManager(make_engine(folder, "torch", max_context=256), store)


def test_reasoning_is_stored_apart_and_a_reply_cut_while_thinking_goes_on_thinking(
        make_engine, tiny_models, store, tmp_path):
    """DeepSeek-R1's template opens <think> in the prompt: the tiny model's reply is all reasoning."""
    manager = manager_for(make_engine, tiny_models, store, tmp_path, "deepseek-r1-distill")
    try:
        c = store.create_conversation("c")
        chunks = list(manager.reply(c.id, "2+2?", CUT))
        reply = store.messages(c.id)[-1]
        assert reply.content == "" and reply.reasoning == "".join(ch.reasoning for ch in chunks).strip()
        assert reply.finish_reason == "length" and reply.reasoning_s is not None
        # cut while thinking: still sent, so Continue goes on inside the reasoning
        assert chat_messages(store, c.id)[-1] == {"role": "assistant", "content": "", "reasoning": reply.reasoning}
        more = list(manager.continue_reply(c.id, reply.id, CUT))
        assert "".join(ch.text for ch in more) == "" and "".join(ch.reasoning for ch in more)
        longer = store.get_message(reply.id)
        assert longer.reasoning.startswith(reply.reasoning) and len(longer.reasoning) > len(reply.reasoning)
    finally:
        manager.close()


def test_the_conversations_think_switch_reaches_the_model(make_engine, tiny_models, store, tmp_path):
    manager = manager_for(make_engine, tiny_models, store, tmp_path, "qwen3")
    try:
        on, off = store.create_conversation("on"), store.create_conversation("off")
        store.update_conversation(off.id, thinking=False)
        prompt_on = list(manager.reply(on.id, "Hi", CUT))[-1].stats.prompt_tokens
        prompt_off = list(manager.reply(off.id, "Hi", CUT))[-1].stats.prompt_tokens
        closed = manager.engine.tokenizer("<think>\n\n</think>\n\n", add_special_tokens=False).input_ids
        assert prompt_off - prompt_on == len(closed)  # Qwen3 closes an empty think block when off
    finally:
        manager.close()
