"""Model ▸ Local API server…: the local API's state, a switch to serve, who may connect (this
computer only or the local network, with its key and a warning in words), the addresses to copy, and
the live request log (what LM Studio's Developer tab shows): each request's time, method and path,
client, status, tokens and seconds, and for a refusal the reason the client was given.

The window only shows what `LocalServer` reports (its state and each ended request); every change
goes through the app's settings (`change(api_server=True)`, saved), as Settings ▸ Local API server
does, so both agree and the choice is there after a restart.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QDialog, QFormLayout, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from app.fitting import ElidedLabel, WrapLabel
from app.models.local_server import LocalServer
from app.models.serve_fields import CopyField, KeyRow, ScopeBox, network_warning, new_key
from app.settings.app_settings import AppSettings

COLUMNS = ("Time", "Request", "Client", "Status", "Tokens", "Seconds")
REFUSED = QColor("#d0473a")
"""A 4xx/5xx row's text: readable on the light and the dark theme."""
CLIENT = COLUMNS.index("Client")
NARROW = 640
"""Below this width the Client column is hidden."""
SHOWN = 500
"""Rows kept in the table (the server's log keeps as many)."""
MINIMUM_HEIGHT = 460
"""Room, at the narrowest, for every row above the table on the network (warning and both addresses)."""


class ServerView(QDialog):
    """The local API: on/off, who may connect, where it listens or why it is off, and its requests
    as they end. `settings()` gives the app's settings now; `change(**fields)` applies and saves some."""

    def __init__(self, server: LocalServer, settings: Callable[[], AppSettings], change: Callable[..., None],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Local API server")
        self.setAccessibleName("Local API server")
        self.server, self._settings, self._change = server, settings, change
        self.serving = QCheckBox("&Serve the loaded model to other apps")
        self.serving.toggled.connect(self._toggled)
        now = settings()
        self.scope = ScopeBox(now.api_host)
        self.scope.currentIndexChanged.connect(lambda _i: self._scope_chosen())
        self.key = KeyRow(now.api_key)
        self.key.edited.connect(lambda key: self._change(api_key=key))
        self.warning = network_warning()
        self.state = WrapLabel()
        self.state.setAccessibleName("Local API server state")
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.here = CopyField("Address on this computer")
        self.there = CopyField("Address for other computers")
        form = QFormLayout()
        form.addRow(self.serving)
        form.addRow("Who can &use it:", self.scope)
        form.addRow("API &key:", self.key)
        form.addRow(self.warning)
        form.addRow(self.state)
        form.addRow("This computer:", self.here)
        form.addRow("Other computers:", self.there)
        self.form = form
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
        self.empty = ElidedLabel("No requests yet. Point an OpenAI-compatible client at the address above.",
                                 compact="No requests yet.")
        self.empty.setToolTip("It answers OpenAI chat/completions, completions and Responses, and Anthropic "
                              "Messages; each request appears here as it ends.")
        clear = QPushButton("C&lear")
        clear.clicked.connect(self.clear)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        for button in (clear, close):
            button.setAutoDefault(False)  # Enter in the key field saves the key; it neither clears nor closes
        buttons = QHBoxLayout()
        buttons.addWidget(self.empty)
        buttons.addStretch(1)
        buttons.addWidget(clear)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.detail)
        layout.addLayout(buttons)
        self.table.setMinimumHeight(96)  # the header and a row or two, however much the rows above say
        self.setMinimumSize(480, MINIMUM_HEIGHT)
        self.resize(760, 540)
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
        network = self.server.network_address
        if problem:
            text = problem
        elif address and self.server.paused_for:
            text = (f"Paused: Confab uses the model on {self.server.paused_for}; this API serves only a model "
                    f"loaded on this computer ({address}).")
        elif address:
            text = f"Serving {'this computer and the local network' if network else 'this computer only'}."
        elif self.server.wanted:
            text = "Starting…"
        else:
            text = "Off. Turn it on to let editors and agents use the loaded model."
        self.state.setText(text)
        self.state.setStyleSheet(f"color: {REFUSED.name()};" if problem else "")
        self.here.set_text(address)
        self.there.set_text(network)
        self.form.setRowVisible(self.here, bool(address))
        self.form.setRowVisible(self.there, bool(network))
        self.form.setRowVisible(self.warning, self.scope.is_network())

    def _toggled(self, on: bool) -> None:
        if on and self.scope.is_network() and not self.key.key():
            self.key.set_key(new_key())  # the network needs a key: one is made, shown and saved
            self._change(api_server=True, api_key=self.key.key())
        else:
            self._change(api_server=on)
        self.refresh_state()

    def _scope_chosen(self) -> None:
        """The network needs a key: one is made when there is none; a running server moves at once."""
        if self.scope.is_network() and not self.key.key():
            self.key.set_key(new_key())
        self._change(api_host=self.scope.host(), api_key=self.key.key())
        self.refresh_state()

    def show_network_choice(self) -> None:
        """Model ▸ Serve on the local network…: the same window, its choice of who may connect in focus."""
        self.scope.setFocus()

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
