"""Model ▸ Local API server…: the local API's state, a switch to serve, and the live request log
(what LM Studio's Developer tab shows): each request's time, method and path, client, status,
tokens and seconds, and for a refusal the reason the client was given.

The window only shows what `LocalServer` reports (its state and each ended request); turning the API
on or off goes through the app's settings, as Settings ▸ Local API server does, so both agree.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QDialog, QHBoxLayout, QHeaderView, QLabel, QPushButton,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.models.local_server import LocalServer

COLUMNS = ("Time", "Request", "Client", "Status", "Tokens", "Seconds")
REFUSED = QColor("#d0473a")
"""A 4xx/5xx row's text: readable on the light and the dark theme."""
CLIENT = COLUMNS.index("Client")
NARROW = 640
"""Below this width the Client column is hidden."""
SHOWN = 500
"""Rows kept in the table (the server's log keeps as many)."""


class ServerView(QDialog):
    """The local API: on/off, where it listens or why it is off, and its requests as they end."""

    def __init__(self, server: LocalServer, set_serving: Callable[[bool], None],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Local API server")
        self.setAccessibleName("Local API server")
        self.server, self._set_serving = server, set_serving
        self.serving = QCheckBox("&Serve the loaded model to other apps")
        self.serving.toggled.connect(self._toggled)
        self.state = QLabel(wordWrap=True, accessibleName="Local API server state")
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, len(COLUMNS), accessibleName="Requests to the local API")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.currentCellChanged.connect(lambda row, *_: self._show_detail(row))
        self.detail = QLabel(wordWrap=True, accessibleName="The selected request's error")
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.empty = QLabel("No requests yet. Point an OpenAI-compatible client at the address above.")
        clear = QPushButton("C&lear")
        clear.clicked.connect(self.clear)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.empty)
        buttons.addStretch(1)
        buttons.addWidget(clear)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        for widget in (self.serving, self.state, self.table, self.detail):
            layout.addWidget(widget, 1 if widget is self.table else 0)
        layout.addLayout(buttons)
        self.setMinimumSize(480, 320)
        self.resize(760, 460)
        self._entries: list = []
        server.changed.connect(lambda _address: self.refresh_state())
        server.failed.connect(lambda _message: self.refresh_state())
        server.request_done.connect(self.add)
        for entry in server.requests.entries() if server.requests is not None else ():
            self.add(entry)
        self.refresh_state()

    def resizeEvent(self, event) -> None:
        """Narrow, the client's address goes first (it is in every row's tooltip): the request stays readable."""
        super().resizeEvent(event)
        self.table.setColumnHidden(CLIENT, self.width() < NARROW)

    # -- state ---------------------------------------------------------------------------------------
    def refresh_state(self) -> None:
        address, problem, _free = self.server.state()
        self.serving.blockSignals(True)
        self.serving.setChecked(bool(address or problem or self.server.wanted))
        self.serving.blockSignals(False)
        if problem:
            text = problem
        elif address and self.server.paused_for:
            text = (f"Paused: Confab uses the model on {self.server.paused_for}; this API serves only a model "
                    f"loaded on this computer ({address}).")
        elif address:
            text = (f"Serving at {address} (this computer only): OpenAI chat/completions and Responses, "
                    "Anthropic Messages. Requests appear below as they end.")
        elif self.server.wanted:
            text = "Starting…"
        else:
            text = "Off. Turn it on to let editors and agents on this computer use the loaded model."
        self.state.setText(text)

    def _toggled(self, on: bool) -> None:
        self._set_serving(on)
        self.refresh_state()

    # -- requests ------------------------------------------------------------------------------------
    def add(self, entry) -> None:
        """One ended request, newest at the bottom (the view follows it unless the user scrolled up)."""
        bar = self.table.verticalScrollBar()
        following = bar.value() >= bar.maximum() - 2
        if self.table.rowCount() >= SHOWN:
            self.table.removeRow(0)
            self._entries.pop(0)
        row = self.table.rowCount()
        self.table.insertRow(row)
        self._entries.append(entry)
        for column, text in enumerate(row_texts(entry)):
            item = QTableWidgetItem(text)
            item.setToolTip(f"{entry.method} {entry.path} from {entry.client}" + (f"\n{entry.error}" if entry.error else ""))
            if column in (3, 4, 5):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if entry.status >= 400:
                item.setForeground(REFUSED)
            self.table.setItem(row, column, item)
        self.empty.setVisible(False)
        if following:
            self.table.scrollToBottom()

    def clear(self) -> None:
        self.table.setRowCount(0)
        self._entries.clear()
        self.detail.clear()
        if self.server.requests is not None:
            self.server.requests.clear()
        self.empty.setVisible(True)

    def _show_detail(self, row: int) -> None:
        entry = self._entries[row] if 0 <= row < len(self._entries) else None
        self.detail.setText(f"{entry.status}: {entry.error}" if entry is not None and entry.error else "")


def row_texts(entry) -> tuple[str, ...]:
    """The table's cells for one request: "14:02:31", "POST /v1/chat/completions", "127.0.0.1:53122",
    "200", "812 → 64", "1.42"."""
    if entry.prompt_tokens is not None or entry.completion_tokens is not None:
        tokens = f"{entry.prompt_tokens if entry.prompt_tokens is not None else '?'} → " \
                 f"{entry.completion_tokens if entry.completion_tokens is not None else '?'}"
    else:
        tokens = ""
    status = "gone" if entry.status == 499 else str(entry.status)
    return (time.strftime("%H:%M:%S", time.localtime(entry.started)), f"{entry.method} {entry.path}",
            entry.client, status, tokens, f"{entry.seconds:.2f}")
