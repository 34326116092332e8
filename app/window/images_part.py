"""The status bar's word that the loaded model sees images ("Sees images"; how, in its tooltip),
shown only while it does: a text model says nothing there, and an image sent to it is refused, in
words, before it is sent (app/chat/attachment_tray.py)."""

from __future__ import annotations

from app.chat.image_support import ImageSupport
from app.window.status_parts import PartLabel


class ImagesLabel(PartLabel):
    """"Sees images" while the model takes images; hidden otherwise."""

    def __init__(self) -> None:
        super().__init__("")
        self.setAccessibleName("Whether the model sees images")

    def show_support(self, support: ImageSupport) -> None:
        self.setText("Sees images" if support.takes else "", "Images" if support.takes else "")
        self.setToolTip(f"This model reads images: {support.reason}.\nPaste, drop or attach one with a message."
                        if support.takes else "")
