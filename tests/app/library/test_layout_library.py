"""The library's parts at the default size and at the minimum: the header badge, the Library button
and the indexing line (a long file name) give up width, so the window and the conversation list keep
theirs; a reply's sources with long names wrap inside the view; the dialog fits the smallest window."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from app.library.embedder import SharedEmbedder  # noqa: E402
from app.library.indexer import IndexProgress  # noqa: E402
from app.library.room import LibraryRoom  # noqa: E402
from app.store import ChunkRow, Source  # noqa: E402
from tests.app.gui_fixtures import bridge, gui_engine, window  # noqa: E402,F401 (fixtures)
from tests.app.layout_checks import DEFAULT, MINIMUM, inside, sticking_out  # noqa: E402

LONG = "the-complete-operations-and-maintenance-handbook-for-river-pumping-stations-volume-two"


def library_conversation(store) -> int:
    c = store.create_conversation("Pumping stations and their maintenance over the years, a long title",
                                  system_prompt="Answer from the handbooks.")
    for i in range(3):
        doc = store.library.add(c.id, f"/docs/{LONG}-{i}.pdf", f"{LONG}-{i}.pdf", "application/pdf")
        store.library.fill(doc.id, [ChunkRow("Pumps.", page=12)], np.ones((1, 4), np.float32) / 2,
                           content_hash="h", embedder="test", media_type="application/pdf", size=10, modified=0.0)
    store.append_message(c.id, "user", "How are pumps serviced?")
    reply = store.append_message(c.id, "assistant", "Yearly.")
    store.library.add_sources(reply.id, [Source(f"{LONG}-{i}.pdf", f"pp. 12–13, §{'Servicing ' * 4}", "Pumps.", 1)
                                         for i in range(5)])
    return c.id


@pytest.mark.parametrize("size", [DEFAULT, MINIMUM], ids=["default", "minimum"])
def test_the_library_parts_never_push_the_window(qtbot, window, bridge, size):  # noqa: F811
    room = LibraryRoom(window, bridge, SharedEmbedder("/nowhere"))  # no weights: none are needed
    try:
        made = []
        bridge.run(library_conversation).success(made.append)
        qtbot.waitUntil(lambda: bool(made), timeout=5_000)
        window.resize(*size)
        qtbot.wait(50)
        listed = window.splitter.sizes()[0]
        window.show_conversation(made[0])
        qtbot.waitUntil(lambda: room.badge.isVisible() and len(window.chat_view.message_views()) == 2, timeout=5_000)
        room.line.show_progress(IndexProgress(made[0], f"{LONG}.pdf", 3, 12, "embedding", 0.4))
        qtbot.wait(50)
        assert (window.width(), window.splitter.sizes()[0]) == (size[0], listed)
        assert all(inside(w, window.chat) for w in (room.badge, room.button, room.line, room.line.cancel_button))
        assert room.badge.text() == "Library: 3 documents" and room.button.text() == "Library · 3"
        assert len(window.chat_view.message_views()[-1].sources.links) == 5
        assert sticking_out(window.chat_view) == []
        dialog = room.open_dialog()
        qtbot.waitUntil(lambda: dialog.list.topLevelItemCount() == 3, timeout=5_000)
        hint = dialog.minimumSizeHint()
        assert hint.width() <= MINIMUM[0] and hint.height() <= MINIMUM[1]
        dialog.close()
    finally:
        room.close()
