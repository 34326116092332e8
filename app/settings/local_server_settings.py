"""Settings ▸ "Local API server": on/off, port and an optional API key, as one group box, and what
the server does now (`show_state`): one that could not start shows off, says why and offers a free port."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QSpinBox, QWidget

from app.settings.app_settings import API_PORT_RANGE, AppSettings


class LocalServerGroup(QGroupBox):
    """Edits api_server, api_port and api_key; `values()` gives them for `dataclasses.replace`."""

    def __init__(self, settings: AppSettings, parent: Optional[QWidget] = None) -> None:
        super().__init__("Local API server", parent)
        form = QFormLayout(self)
        self.enabled = QCheckBox("Serve the loaded model to other apps (&OpenAI-compatible API)")
        self.enabled.setAccessibleName("Local API server")
        self.enabled.setToolTip("Editors, scripts and agents on this computer can use the loaded model "
                                "at http://127.0.0.1:<port>/v1; the address shows in the status bar")
        self.enabled.setChecked(settings.api_server)
        self.port = QSpinBox()
        self.port.setAccessibleName("API server port")
        self.port.setToolTip("The port the server listens on, on 127.0.0.1 only")
        self.port.setRange(*API_PORT_RANGE)
        self.port.setValue(settings.api_port)
        self.key = QLineEdit(settings.api_key)
        self.key.setAccessibleName("API key")
        self.key.setToolTip("When set, clients must send 'Authorization: Bearer <key>'")
        self.key.setPlaceholderText("none (any program on this computer may connect)")
        self.key.setEchoMode(QLineEdit.EchoMode.PasswordEchoOnEdit)
        form.addRow(self.enabled)
        form.addRow("P&ort:", self.port)
        form.addRow("API &key:", self.key)
        self.state = QLabel(wordWrap=True, accessibleName="Local API server state")
        self.state.hide()
        self.use_free = QPushButton(accessibleName="Use the free port")
        self.use_free.hide()
        self.use_free.clicked.connect(self._use_free_port)
        self._free_port: Optional[int] = None
        form.addRow(self.state)
        form.addRow("", self.use_free)
        self.enabled.toggled.connect(self._enable_fields)
        self._enable_fields(settings.api_server)

    def show_state(self, address: str, problem: str = "", free_port: Optional[int] = None) -> None:
        """What the server does now. Running: its address. Asked for but not running (`problem`, a port
        another program holds, say): the box shows the truth, off, with why, and `free_port` offered."""
        self._free_port = free_port
        if problem:
            self.enabled.setChecked(False)
            self.state.setText(problem)
            self.state.setStyleSheet("color: #b00020;")
        else:
            self.state.setText(f"Running at {address}" if address else "")
            self.state.setStyleSheet("")
        self.state.setVisible(bool(self.state.text()))
        self.use_free.setText(f"Use port {free_port}" if free_port is not None else "")
        self.use_free.setVisible(bool(problem) and free_port is not None)

    def _use_free_port(self) -> None:
        if self._free_port is not None:
            self.port.setValue(self._free_port)
            self.enabled.setChecked(True)
            self.use_free.hide()

    def _enable_fields(self, on: bool) -> None:
        self.port.setEnabled(on)
        self.key.setEnabled(on)

    def values(self) -> dict:
        return {"api_server": self.enabled.isChecked(), "api_port": self.port.value(),
                "api_key": self.key.text().strip()}
