"""Bad images and models that cannot see: each a typed error in words a user understands, raised
before anything is queued, the session left as it was; and whether a model takes images is said."""

from __future__ import annotations

import struct
import zlib

import pytest

from engine import (EngineConfig, ImageFormatError, ImagesNotSupportedError, ImageTooLargeError,
                    ImageUnreadableError, InvalidRequestError, ModelLoadError, image_part)
from engine.image_check import MAX_IMAGE_BYTES
from tests.engine.helpers import token_ids
from tests.engine.images_helpers import asking, greedy, png

GOOD = png(64, 64, seed=1)


def _png_header(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


BAD = [
    ("garbage", b"not an image at all, just some text", ImageFormatError,
     "is not an image the model can read \\(PNG, JPEG, GIF or BMP\\)"),
    ("webp", b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(32), ImageFormatError, "is a WebP file; the model reads PNG, JPEG"),
    ("heic", b"\x00\x00\x00\x18ftypheic" + bytes(32), ImageFormatError, "is a HEIC file"),
    ("png cut in its header", GOOD[:20], ImageUnreadableError, "could not be read: its PNG header is damaged or cut short"),
    ("png cut in its pixels", GOOD[:len(GOOD) // 2], ImageUnreadableError,
     "could not be read: the PNG file is damaged or cut short"),
    ("png with damaged pixels", GOOD[:60] + bytes(len(GOOD) - 80) + GOOD[-20:], ImageUnreadableError,
     "could not be read: the PNG file is damaged or cut short"),
    ("gif cut short", b"GIF89a\x40\x00\x40\x00\xf7\x00\x00" + bytes(40), ImageUnreadableError,
     "could not be read: the file is damaged or cut short"),
    ("jpeg cut short", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
                       b"\xff\xc0\x00\x11\x08\x00\x40\x00\x40\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01" + bytes(100),
     ImageUnreadableError, "could not be read: the JPEG file is cut short"),
    ("too many pixels", _png_header(10_000, 5_000) + bytes(64), ImageTooLargeError,
     "is 10000×5000 pixels \\(50 megapixels\\); images of up to 40 megapixels"),
    ("too many bytes", GOOD + bytes(MAX_IMAGE_BYTES), ImageTooLargeError, "is 20.0 MB; images of up to 20 MB are read"),
    ("not bytes", "a file name.png", ImageUnreadableError, "must be given as bytes, not str"),
]


@pytest.mark.parametrize("name, data, error, words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_image_is_refused_in_words_and_the_session_is_untouched(vision_engine, name, data, error, words):
    with vision_engine.open_session() as s, vision_engine.open_session() as ref:
        first = token_ids(s.chat(asking(GOOD), greedy(6)))
        held = s.tokens
        bad = [{"role": "user", "content": [{"type": "text", "text": "and "}, image_part(data)]}]
        with pytest.raises(error, match=f"^image 2 \\(message 3\\) {words}"):
            s.chat(asking(GOOD) + [{"role": "assistant", "content": "A picture."}] + bad, greedy(6))
        assert s.tokens == held and not s.busy
        again = token_ids(s.chat(asking(GOOD), greedy(6)))  # the session goes on as if nothing was sent
        assert again == first == token_ids(ref.chat(asking(GOOD), greedy(6)))


def test_a_text_only_model_refuses_an_image_and_says_which_models_can_see(make_engine, tiny_models, backend):
    engine = make_engine(tiny_models["llama"], backend)
    assert not engine.takes_images
    with engine.open_session() as s:
        with pytest.raises(ImagesNotSupportedError, match="this model cannot see images: .*mmproj"):
            s.chat(asking(GOOD), greedy(4))
        assert s.tokens == [] and not s.busy
        assert len(token_ids(s.chat([{"role": "user", "content": "Hello"}], greedy(4)))) == 4
    with pytest.raises(ImagesNotSupportedError):
        engine.chat_tokens(asking(GOOD))


def test_whether_a_model_takes_images_is_in_its_info(vision_engine, make_engine, vision_model):
    assert vision_engine.takes_images
    assert vision_engine.images_reason == "images through mmproj-model.gguf (found beside the model)"
    text_only = make_engine(vision_model, "llamacpp", max_context=256, mmproj="")
    assert not text_only.takes_images and "reads text only" in text_only.images_reason
    asked = make_engine(vision_model, "llamacpp", max_context=256, mmproj=str(vision_model.with_name("mmproj-model.gguf")))
    assert asked.takes_images and asked.images_reason == "images through mmproj-model.gguf"


def test_a_projector_asked_for_that_is_not_there_fails_the_load(make_engine, vision_model):
    with pytest.raises(ModelLoadError, match="the vision projector mmproj-none.gguf is not a file"):
        make_engine(vision_model, "llamacpp", max_context=256, mmproj=str(vision_model.with_name("mmproj-none.gguf")))


def test_a_projector_of_another_model_leaves_a_text_model_saying_why(make_engine, vision_model, bundled_folder,
                                                                     tmp_path):
    """An mmproj found beside a model it does not fit (576 wide, the projector gives 64) is not used:
    the model loads and reads text, and says why it cannot see."""
    from engine.models.sources import bundled_gguf

    text = bundled_gguf("smollm2-135m-instruct")
    (tmp_path / text.name).symlink_to(text)
    (tmp_path / "mmproj-other.gguf").symlink_to(vision_model.with_name("mmproj-model.gguf"))
    engine = make_engine(tmp_path / text.name, "llamacpp", max_context=256)
    assert not engine.takes_images
    assert engine.images_reason == ("llama.cpp could not load the vision projector mmproj-other.gguf for this model; "
                                    "the model reads text only")
    with engine.open_session() as s:
        assert len(token_ids(s.chat([{"role": "user", "content": "Hi"}], greedy(3)))) == 3


def test_an_unknown_content_part_is_refused(vision_engine):
    with vision_engine.open_session() as s, pytest.raises(InvalidRequestError, match="a content part must be"):
        s.chat([{"role": "user", "content": [{"type": "audio", "data": b""}]}], greedy(4))


def test_chat_tokens_are_what_a_fresh_session_prefills(vision_engine):
    messages = asking(GOOD)
    ids = vision_engine.chat_tokens(messages)
    with vision_engine.open_session() as s:
        chunks = list(s.chat(messages, greedy(3)))
        assert s.tokens[:len(ids)] == ids
    assert chunks[-1].stats.prompt_tokens == len(ids)
    assert len([t for t in ids if t < 0]) == 16  # 64×64 pixels in 8×8 patches, merged 2×2


def test_engine_config_checks_mmproj():
    with pytest.raises(InvalidRequestError, match="mmproj must be a path string"):
        EngineConfig(mmproj=3)


def test_without_libmtmd_a_vision_model_loads_as_a_text_model_saying_how_to_get_images(make_engine, vision_model,
                                                                                      monkeypatch):
    from engine.backends import llamacpp_vision

    monkeypatch.setattr(llamacpp_vision, "library", lambda: None)
    engine = make_engine(vision_model, "llamacpp", max_context=256)
    assert not engine.takes_images
    assert "no libmtmd (built with -DLLAVA_BUILD=OFF): `python3 bootstrap.py setup` builds it" in engine.images_reason
    with engine.open_session() as s, pytest.raises(ImagesNotSupportedError, match="no libmtmd"):
        s.chat(asking(GOOD), greedy(4))
