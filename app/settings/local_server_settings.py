"""Settings ▸ "Local API server": on/off, who may connect (this computer or the local network), port
and API key, as one group box, and what the server does now (`show_state`): one that could not start
shows off, says why and offers a free port. Choosing the network makes a key when there is none and
shows, in words, that others on the network can then use the model."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLabel, QPushButton, QSpinBox, QWidget

from app.models.serve_fields import KeyRow, ScopeBox, network_warning
from app.settings.app_settings import API_PORT_RANGE, AppSettings


class LocalServerGroup(QGroupBox):
    """Edits api_server, api_host, api_port and api_key; `values()` gives them for `dataclasses.replace`."""

    def __init__(self, settings: AppSettings, parent: Optional[QWidget] = None) -> None:
        super().__init__("Local API server", parent)
        form = QFormLayout(self)
        self.enabled = QCheckBox("Serve the loaded model to other apps (&OpenAI-compatible API)")
        self.enabled.setAccessibleName("Local API server")
        self.enabled.setToolTip("Editors, scripts and agents can use the loaded model at "
                                "http://127.0.0.1:<port>/v1 (on the network, at this computer's address); "
                                "the state shows in the status bar")
        self.enabled.setChecked(settings.api_server)
        self.port = QSpinBox()
        self.port.setAccessibleName("API server port")
        self.port.setToolTip("The port the server listens on")
        self.port.setRange(*API_PORT_RANGE)
        self.port.setValue(settings.api_port)
        self.scope = ScopeBox(settings.api_host)
        self.key_row = KeyRow(settings.api_key)
        self.key = self.key_row.field
        self.warning = network_warning()
        form.addRow(self.enabled)
        form.addRow("Who can &use it:", self.scope)
        form.addRow("P&ort:", self.port)
        form.addRow("API &key:", self.key_row)
        form.addRow(self.warning)
        self.state = QLabel(wordWrap=True, accessibleName="Local API server state")
        self.state.hide()
        self.use_free = QPushButton(accessibleName="Use the free port")
        self.use_free.hide()
        self.use_free.clicked.connect(self._use_free_port)
        self._free_port: Optional[int] = None
        form.addRow(self.state)
        form.addRow("", self.use_free)
        self.enabled.toggled.connect(self._enable_fields)
        self.scope.currentIndexChanged.connect(lambda _i: self._scope_changed())
        self._enable_fields(settings.api_server)
        self.warning.setVisible(self.scope.is_network())

    def show_state(self, address: str, problem: str = "", free_port: Optional[int] = None,
                   network_address: str = "") -> None:
        """What the server does now. Running: its addresses (`network_address`: the one other computers
        use). Asked for but not running (`problem`, a port another program holds, a network with no
        key): the box shows the truth, off, with why, and `free_port` offered."""
        self._free_port = free_port
        if problem:
            self.enabled.setChecked(False)
            self.state.setText(problem)
            self.state.setStyleSheet("color: #b00020;")
        else:
            others = f"\nOther computers use {network_address}" if network_address else ""
            self.state.setText(f"Running at {address}{others}" if address else "")
            self.state.setStyleSheet("")
        self.state.setVisible(bool(self.state.text()))
        self.use_free.setText(f"Use port {free_port}" if free_port is not None else "")
        self.use_free.setVisible(bool(problem) and free_port is not None)

    def _use_free_port(self) -> None:
        if self._free_port is not None:
            self.port.setValue(self._free_port)
            self.enabled.setChecked(True)
            self.use_free.hide()

    def _scope_changed(self) -> None:
        """The network needs a key: one is made when there is none; the warning says what it means."""
        if self.scope.is_network():
            self.key_row.ensure()
        self.warning.setVisible(self.scope.is_network())

    def _enable_fields(self, on: bool) -> None:
        for field in (self.scope, self.port, self.key_row):
            field.setEnabled(on)

    def values(self) -> dict:
        return {"api_server": self.enabled.isChecked(), "api_port": self.port.value(),
                "api_host": self.scope.host(), "api_key": self.key_row.key()}
