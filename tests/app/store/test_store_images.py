"""Attached images are kept in the database with their message (the bytes, not a path), come back
with it, go to the model as image parts (or, for a text model, as a line naming them), and are
carried whole by the JSON export (base64) and shown in the Markdown one (a data URL)."""

import base64
import json

import pytest

from app.conversations.prompt import chat_messages
from app.store import Attachment, ImportFormatError, InvalidValueError, export_json, import_json
from app.store.export import export_markdown
from engine import image_part

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c49444154789c63f8df"
    "c0000004010180c52a185d0000000049454e44ae426082")
PHOTO = Attachment("tram.jpg", "image/jpeg", 3_500_000, "", tokens=80, tokens_exact=True, data=PNG,
                   width=2048, height=1536, scaled_from=(4032, 3024), thumbnail=PNG)
NOTES = Attachment("notes.md", "text/markdown", 9, "Tuesday.\n")


def test_an_image_comes_back_with_its_bytes_and_sizes(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO, NOTES))
    (m,) = store.messages(c.id)
    image, notes = m.attachments
    assert (image.is_image, image.data, image.has_data, image.width, image.height, image.scaled_from,
            image.tokens, image.thumbnail) == (True, PNG, True, 2048, 1536, (4032, 3024), 80, PNG)
    assert (notes.is_image, notes.data, notes.width) == (False, None, None), "a file's kept bytes are read on demand"


def test_an_image_without_its_bytes_is_refused(store):
    c = store.create_conversation("Trip")
    with pytest.raises(InvalidValueError, match="the image tram.jpg has no bytes to store"):
        store.append_message(c.id, "user", "Look", attachments=(Attachment("tram.jpg", "image/jpeg", 10, ""),))


def test_an_edited_message_keeps_its_image(store):
    c = store.create_conversation("Trip")
    first = store.append_message(c.id, "user", "Look", attachments=(PHOTO,))
    edited = store.append_message(c.id, "user", "Look again", parent_id=None, attachments_from=first.id)
    (image,) = edited.attachments
    assert (image.data, image.scaled_from, image.thumbnail) == (PNG, (4032, 3024), PNG)


def test_the_model_is_sent_the_image_before_the_files_and_text(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO, NOTES))
    (sent,) = chat_messages(store, c.id)
    assert sent["content"] == [image_part(PNG), {"type": "text", "text":
                                                 '<file name="notes.md">\nTuesday.\n</file>\n\nWhat is this?'}]
    store.append_message(c.id, "user", "", attachments=(PHOTO,))
    assert chat_messages(store, c.id)[-1]["content"] == [image_part(PNG)], "an image alone"


def test_a_text_model_is_told_an_image_was_there(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO,))
    (sent,) = chat_messages(store, c.id, images=False)
    assert sent["content"] == "[image tram.jpg: not shown, this model reads text only]\nWhat is this?"


def test_the_json_export_carries_the_image_and_imports_it_whole(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO,))
    exported = json.loads(export_json(store, c.id))
    (a,) = exported["messages"][0]["attachments"]
    assert base64.b64decode(a["data_base64"]) == PNG
    assert (a["media_type"], a["width"], a["height"], a["scaled_from"], a["tokens"]) == (
        "image/jpeg", 2048, 1536, [4032, 3024], 80)
    copy = import_json(store, exported)
    assert json.loads(export_json(store, copy.id))["messages"] == exported["messages"]
    (image,) = store.messages(copy.id)[0].attachments
    assert (image.data, image.thumbnail) == (PNG, None), "the thumbnail is made again from the image"


@pytest.mark.parametrize("change, reason", [
    ({"data_base64": None}, "an attached image needs its data_base64"),
    ({"width": 0}, "attachment width and height must both be whole numbers of pixels"),
    ({"height": None}, "attachment width and height must both be whole numbers of pixels"),
    ({"scaled_from": [4032]}, "attachment scaled_from must be \\[width, height\\] in pixels"),
])
def test_a_bad_image_in_an_export_is_refused_with_the_reason(store, change, reason):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO,))
    exported = json.loads(export_json(store, c.id))
    exported["messages"][0]["attachments"][0].update(change)
    with pytest.raises(ImportFormatError, match=f"message 1: {reason}"):
        import_json(store, exported)


def test_the_markdown_export_shows_the_image_in_place(store):
    c = store.create_conversation("Trip")
    store.append_message(c.id, "user", "What is this?", attachments=(PHOTO,))
    text = export_markdown(store, c.id)
    assert f"![tram.jpg](data:image/jpeg;base64,{base64.b64encode(PNG).decode()})" in text
    assert "*Attached: tram.jpg*" in text
