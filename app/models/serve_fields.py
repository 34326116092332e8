"""The local API's fields that Settings and the Server view share: who may connect (this computer
only, or the local network), the API key (made for the user, copyable), the warning the network
needs, and an address to copy.

    scope = ScopeBox("127.0.0.1")        # "This computer only" / "The local network" / one address
    scope.host()                         # "0.0.0.0" when the network is chosen
    key = KeyRow("")                     # a field, New key, Copy
    key.ensure()                         # a fresh key when there is none (the network needs one)
    warning = network_warning()          # a short warning in words, the whole one in its tooltip
"""

from __future__ import annotations

import secrets
from typing import Optional

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QApplication, QComboBox, QHBoxLayout, QLineEdit, QPushButton, QWidget

from app.fitting import WrapLabel
from app.models.lan import EVERY_NETWORK, LOOPBACK, is_loopback, lan_addresses

THIS_COMPUTER = "This computer only"
NETWORK = "The local network"
NETWORK_WARNING = ("Others on your network who have the API key can use the model: their prompts run on this "
                   "computer. Requests are not encrypted. Share the key only with people you trust.")
NETWORK_WARNING_MORE = ("Anyone on the local network who has the API key can send the model prompts, which run "
                        "on this computer's memory and processor, and read its replies. Requests travel as plain "
                        "HTTP, unencrypted: use a network you trust (not a café's), give the key only to people "
                        "and programs you trust, make a new key to shut out everyone who has the old one, and "
                        "turn the API off when you are done.")
"""The warning, whole, in the short one's tooltip."""
KEY_BYTES = 24
"""A new key's randomness: 24 bytes, 32 characters of URL-safe text."""


def new_key() -> str:
    return "confab-" + secrets.token_urlsafe(KEY_BYTES)


def network_warning() -> WrapLabel:
    label = WrapLabel(NETWORK_WARNING)
    label.setAccessibleName("Local network warning")
    label.setToolTip(NETWORK_WARNING_MORE)
    return label


class ScopeBox(QComboBox):
    """Who may connect: this computer only (127.0.0.1), the local network (every address this
    computer has, 0.0.0.0), or one network only (one of its addresses). `host()` is the choice."""

    def __init__(self, host: str = LOOPBACK, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Who can use the local API")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(24)  # a long interface name never widens the dialog; the list shows it whole
        self.setToolTip("This computer only: programs on this computer (127.0.0.1).\n"
                        "The local network: also other computers on your networks, with the API key\n"
                        "(through one address only: other computers on that network alone).")
        self.addItem(THIS_COMPUTER, LOOPBACK)
        self.addItem(NETWORK, EVERY_NETWORK)
        for a in lan_addresses():
            self.addItem(f"{NETWORK}, through {a.ip} only ({a.interface})", a.ip)
        self.set_host(host)

    def host(self) -> str:
        return self.currentData()

    def is_network(self) -> bool:
        return not is_loopback(self.host())

    def set_host(self, host: str) -> None:
        """Choose `host`; an address this computer no longer has is kept, and said to be gone."""
        index = self.findData(host)
        if index < 0:
            self.addItem(f"{NETWORK}, through {host} only (not found now)", host)
            index = self.count() - 1
        self.setCurrentIndex(index)


class KeyRow(QWidget):
    """The API key: a field (hidden but while edited), New key and Copy. `edited` on a change."""

    edited = Signal(str)

    def __init__(self, key: str = "", parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.field = QLineEdit(key)
        self.field.setAccessibleName("API key")
        self.field.setToolTip("Clients send it as 'Authorization: Bearer <key>' (OpenAI SDKs: api_key=…)")
        self.field.setPlaceholderText("none (any program on this computer may connect)")
        self.field.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        self.field.editingFinished.connect(lambda: self.edited.emit(self.key()))
        self.make = QPushButton("New key", accessibleName="Make a new API key")
        self.make.setToolTip("Replace the key with a new random one (clients with the old key are refused)")
        self.make.clicked.connect(self.renew)
        self.make.setAutoDefault(False)  # Enter in the key field must not replace the key
        self.copy = CopyButton(self.key, "Copy the API key")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.field, 1)
        row.addWidget(self.make)
        row.addWidget(self.copy)

    def key(self) -> str:
        return self.field.text().strip()

    def set_key(self, key: str) -> None:
        self.field.setText(key)
        self.field.setCursorPosition(0)

    def renew(self) -> None:
        self.set_key(new_key())
        self.edited.emit(self.key())

    def ensure(self) -> bool:
        """Make a key when there is none (the network needs one); True when one was made."""
        if self.key():
            return False
        self.renew()
        return True


class CopyButton(QPushButton):
    """"Copy": puts `text()`'s answer on the clipboard and says "Copied" for a moment."""

    def __init__(self, text, name: str, parent: Optional[QWidget] = None) -> None:
        super().__init__("Copy", parent)
        self.setAccessibleName(name)
        self.setToolTip(name)
        self._text = text
        self.setAutoDefault(False)  # Enter in a dialog's field is not a copy
        self.clicked.connect(self._copy)

    def _copy(self) -> None:
        QApplication.clipboard().setText(self._text())
        self.setText("Copied")
        QTimer.singleShot(1500, self, lambda: self.setText("Copy"))


class CopyField(QWidget):
    """An address to copy: read-only text (selectable) and a Copy button."""

    def __init__(self, name: str, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.field = QLineEdit(readOnly=True, accessibleName=name)
        self.button = CopyButton(self.field.text, f"Copy {name[0].lower()}{name[1:]}")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.field, 1)
        row.addWidget(self.button)

    def set_text(self, text: str) -> None:
        self.field.setText(text)
        self.field.setCursorPosition(0)
