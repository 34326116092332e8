"""Model ▸ Connect to server…: pick a model served elsewhere over the OpenAI API.

Base URL, optional API key, the server's models (from /v1/models) and a Test button that says what
it found, or why it failed in words (connection refused, DNS, 401, timeout, not an OpenAI API), the
raw error behind "Details". The test runs on a thread of its own; its answer comes back through the
GUI route, so the window never waits on the network. The dialog grows to fit the answer: the URL and
key fields keep their size.
"""

from __future__ import annotations

import threading
from typing import Optional

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from app.bridge import GuiRoute
from app.error_line import ErrorLine
from engine import list_models

DEFAULT_URL = "http://127.0.0.1:8317/v1"
TEST_TIMEOUT_S = 8.0
FIELD_WIDTH = 340
"""Pixels the URL and key fields take at least (a URL with a port and /v1 fits)."""


class ConnectDialog(QDialog):
    """Asks for a server and one of its models; `chosen()` gives (base_url, api_key, model)."""

    def __init__(self, base_url: str = "", api_key: str = "", model: str = "",
                 parent: Optional[QWidget] = None, *, timeout_s: float = TEST_TIMEOUT_S) -> None:
        super().__init__(parent)
        self.setWindowTitle("Connect to server")
        self.timeout_s = timeout_s
        self._route = GuiRoute(self)
        self._tests = 0  # a newer test makes an older answer moot
        self._wanted_model = model
        self.url_edit = QLineEdit(base_url or DEFAULT_URL)
        self.url_edit.setPlaceholderText("http://host:port/v1")
        self.url_edit.setMinimumWidth(FIELD_WIDTH)
        self.key_edit = QLineEdit(api_key)
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("none")
        self.model_box = QComboBox()
        self.test_button = QPushButton("&Test")
        self.status = ErrorLine(accessible_name="Test result")
        self.status.show_text("Test lists the server's models.")
        self.status.toggle.toggled.connect(lambda _shown: self._grow())
        form = QFormLayout()
        form.addRow("Base URL", self.url_edit)
        form.addRow("API key", self.key_edit)
        form.addRow("Model", self.model_box)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Connect")
        self.buttons.addButton(self.test_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self.test_button.clicked.connect(self.test)
        self.url_edit.textEdited.connect(self._changed)
        self.key_edit.textEdited.connect(self._changed)
        self._changed()

    @property
    def ok_button(self) -> QPushButton:
        return self.buttons.button(QDialogButtonBox.StandardButton.Ok)

    def test(self) -> None:
        """Ask the server for its models off the GUI thread; the answer fills the list."""
        self._tests += 1
        test, url, key = self._tests, self.base_url(), self.key_edit.text().strip() or None
        self.test_button.setEnabled(False)
        self._say(f"Testing {url}…")

        def work() -> None:
            try:
                models = list_models(url, key, timeout_s=self.timeout_s)
            except Exception as e:  # RemoteError, and anything unexpected: shown, never swallowed
                self._route.post(self._failed, test, e)
            else:
                self._route.post(self._found, test, models)

        threading.Thread(target=work, name="confab-connect-test", daemon=True).start()

    def _found(self, test: int, models: list[str]) -> None:
        if test != self._tests:
            return
        self.test_button.setEnabled(True)
        self.model_box.clear()
        self.model_box.addItems(models)
        if self._wanted_model in models:
            self.model_box.setCurrentText(self._wanted_model)
        if models:
            self._say(f"Found an OpenAI API with {len(models)} model(s): {', '.join(models)}")
        else:
            self._say("Found an OpenAI API, but it lists no models.")
        self.ok_button.setEnabled(bool(models))

    def _failed(self, test: int, error: BaseException) -> None:
        if test != self._tests:
            return
        self.test_button.setEnabled(True)
        self.model_box.clear()
        self.status.show_error(error)
        self.ok_button.setEnabled(False)
        self._grow()

    def _say(self, text: str) -> None:
        self.status.show_text(text)
        self._grow()

    def _grow(self) -> None:
        """Make the dialog tall enough for the answer once laid out (a wrapped answer needs more
        height than the dialog had; it grows, never squeezing the fields)."""
        QTimer.singleShot(0, self._fit_height)

    def _fit_height(self) -> None:
        layout = self.layout()
        layout.activate()
        needed = layout.totalHeightForWidth(self.width()) if layout.hasHeightForWidth() else layout.sizeHint().height()
        if needed > self.height():
            self.resize(self.width(), needed)

    def _changed(self) -> None:
        """A changed URL or key needs a new test before connecting."""
        self._tests += 1
        self.test_button.setEnabled(bool(self.base_url()))
        self.model_box.clear()
        self.ok_button.setEnabled(False)

    def base_url(self) -> str:
        return self.url_edit.text().strip().rstrip("/")

    def chosen(self) -> tuple[str, str, str]:
        """(base URL, API key or "", model)."""
        return self.base_url(), self.key_edit.text().strip(), self.model_box.currentText()
