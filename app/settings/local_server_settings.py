"""Settings ▸ "Local API server": on/off, port and an optional API key, as one group box."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLineEdit, QSpinBox, QWidget

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
        self.enabled.toggled.connect(self._enable_fields)
        self._enable_fields(settings.api_server)

    def _enable_fields(self, on: bool) -> None:
        self.port.setEnabled(on)
        self.key.setEnabled(on)

    def values(self) -> dict:
        return {"api_server": self.enabled.isChecked(), "api_port": self.port.value(),
                "api_key": self.key.text().strip()}
