"""`ConfabApp`: the pieces of the running app and the wiring between them.

The window, the tray icon, the quick chat, settings and model loading each live in their own module;
this one only connects their signals, so the same app runs from `python -m app`, the self-test and
the UI benchmark.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, QRect
from PySide6.QtWidgets import QApplication, QDialog

from app.bridge import Bridge
from app.connect_dialog import ConnectDialog
from app.conversation_settings import ConversationSettingsDialog
from app.macos import set_menubar_only
from app.local_server import LocalServer
from app.main_window import MainWindow
from app.model_loader import ModelLoader, close_in_background
from app.model_picker import ModelPickerDialog
from app.quick_chat import QuickChat
from app.resources import app_icon
from app.settings import AppSettings, load_settings, sampling_params, save_settings
from app.settings_dialog import SettingsDialog
from app.store import data_dir
from app.theme import apply_theme
from app.tray import Tray
from engine import DEFAULT_MODEL, AnyEngine, EngineConfig, remote_source
from engine.remote import parse_remote_source

class ConfabApp(QObject):
    """Owns the bridge, the engine, the window, the tray and the quick chat of one running app."""

    def __init__(self, qapp: QApplication, home: Optional[Path], config: EngineConfig,
                 *, use_tray: bool = True) -> None:
        super().__init__()
        self.qapp = qapp
        self.home = home if home is not None else data_dir()
        self.config = config
        self.engine: Optional[AnyEngine] = None
        self.source = ""
        self.settings = load_settings(self.home)
        self.dark = apply_theme(qapp, self.settings.theme, self.settings.font_size)
        qapp.setWindowIcon(app_icon())
        self.bridge = Bridge(self.home, params=sampling_params({}, self.settings))
        self.window = MainWindow(self.bridge)
        self.window.chat_view.set_dark(self.dark)
        self.loader = ModelLoader(self.bridge.route, self)
        self.quick_chat = QuickChat(self.bridge)
        self.tray = Tray(self) if use_tray else None
        self.local_server = LocalServer(self.bridge.route, self)
        self.window.statusBar().addPermanentWidget(self.local_server.label)
        self._closed = False
        self._fall_back = False
        self.setup_signals()
        self.apply_settings(self.settings)
        self.bridge.opened.add_done_callback(
            lambda f: self.bridge.route.post(self._report_open, f))

    def setup_signals(self) -> None:
        w = self.window
        w.load_model_requested.connect(self.pick_model)
        w.connect_requested.connect(self.connect_server)
        w.settings_requested.connect(self.edit_settings)
        w.conversation_settings_requested.connect(self.edit_conversation_settings)
        w.quit_requested.connect(self.quit)
        self.loader.progress.connect(w.set_progress)
        self.loader.loaded.connect(self._loaded)
        self.loader.failed.connect(self._load_failed)
        self.quick_chat.continue_requested.connect(self.continue_in_window)
        self.quick_chat.reply_finished.connect(lambda _cid: w.refresh_conversations())
        self.local_server.failed.connect(w.show_error)
        if self.tray is not None:
            self.tray.quick_chat_requested.connect(self.show_quick_chat)
            self.tray.open_requested.connect(self.show_window)
            self.tray.quit_requested.connect(self.quit)
        self.qapp.aboutToQuit.connect(self.shutdown)

    # -- model -------------------------------------------------------------------------------------
    def load(self, source: str, *, fall_back: bool = False) -> None:
        """Load `source` off the GUI thread; the current model keeps serving until it is ready.
        `fall_back`: if it fails and no model is loaded, load the bundled one instead (for a
        remembered model that was moved or deleted since)."""
        self._fall_back = fall_back
        self.window.load_model_action.setEnabled(False)
        if self.engine is None:
            self.window.set_state("loading", f"Loading {source}…")
            self.quick_chat.set_ready(False, "Loading model…")
        self.local_server.loading(source)  # API requests get 503 until the new model is ready
        self.loader.load(source, self.config, api_key=self.settings.server_api_key or None)

    def pick_model(self) -> None:
        dialog = ModelPickerDialog(self.source, self.window)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen_source():
            self.load(dialog.chosen_source())

    def connect_server(self) -> None:
        """Model ▸ Connect to server…: the chosen server and model replace the loaded engine."""
        url, model = parse_remote_source(self.source) or ("", "")
        dialog = ConnectDialog(url, self.settings.server_api_key, model or "", self.window)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            url, key, model = dialog.chosen()
            self.settings = replace(self.settings, server_api_key=key)
            save_settings(self.home, self.settings)
            self.load(remote_source(url, model))

    def _loaded(self, engine: AnyEngine, source: str) -> None:
        old, self.engine, self.source = self.engine, engine, source
        for cid in self.bridge.replying():  # their sessions belong to the old model
            self.bridge.stop(cid)
        budget = self.settings.state_budget_mb << 20
        self.bridge.attach_engine(engine, budget).success(lambda _: self._ready(engine, old))
        self.settings = replace(self.settings, last_model=source)
        save_settings(self.home, self.settings)

    def _ready(self, engine: AnyEngine, old: Optional[AnyEngine]) -> None:
        self.local_server.set_engine(engine if engine.is_local else None)  # it serves only this process's
        if old is not None:
            close_in_background(old)
        name = engine.model.name
        self.window.set_model(name, engine.backend, engine.device, engine.capacity)
        self.window.set_state("ready", f"{name} is ready")
        self.window.load_model_action.setEnabled(True)
        self.quick_chat.set_ready(True)

    def _load_failed(self, source: str, message: str) -> None:
        self.window.load_model_action.setEnabled(True)
        self.local_server.set_engine(self.engine)  # the previous model, if any, serves again
        if self.engine is None and self._fall_back and source != DEFAULT_MODEL:
            self.window.show_error(f"Could not {_verb(source)}: {message}. Loading the bundled model instead "
                                   "(Model ▸ Connect to server… tries again).")
            self.load(DEFAULT_MODEL)
        elif self.engine is None:
            self.window.set_state("failed", f"Could not {_verb(source)}: {message}")
            self.quick_chat.set_ready(False, "No model is loaded")
        else:  # the previous model stays loaded and usable
            self.window.set_state("ready", "")
            self.window.show_error(f"Could not {_verb(source)}: {message}. Still using {self.engine.model.name}.")

    # -- settings ----------------------------------------------------------------------------------
    def edit_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self.home, Tray.available(), self.window)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.apply_settings(dialog.result_settings())
            save_settings(self.home, self.settings)

    def apply_settings(self, settings: AppSettings) -> None:
        self.settings = settings
        self.dark = apply_theme(self.qapp, settings.theme, settings.font_size)
        self.window.chat_view.set_dark(self.dark)
        self.bridge.params = sampling_params({}, settings)
        self.window.hide_on_close = bool(settings.close_to_tray and self.tray is not None and self.tray.visible)
        if self.tray is not None and self.tray.visible:  # never hide the Dock icon with no way back
            set_menubar_only(settings.menubar_only)
        self.local_server.apply(settings.api_server, settings.api_port, settings.api_key)

    def edit_conversation_settings(self, conversation_id: int) -> None:
        self.bridge.run(lambda store: store.get_conversation(conversation_id)).success(self._show_conversation_settings)

    def _show_conversation_settings(self, conversation) -> None:
        dialog = ConversationSettingsDialog(conversation, self.settings, self.window)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            system_prompt, sampling = dialog.result()
            self.bridge.run(lambda store: store.update_conversation(
                conversation.id, system_prompt=system_prompt, sampling=sampling))

    # -- windows -----------------------------------------------------------------------------------
    def show_window(self) -> None:
        self.window.show()
        self.window.setWindowState(self.window.windowState() & ~self.window.windowState().WindowMinimized)
        self.window.raise_()
        self.window.activateWindow()

    def show_quick_chat(self, geometry: Optional[QRect] = None) -> None:
        self.quick_chat.show_near(geometry)

    def continue_in_window(self, conversation_id: int) -> None:
        self.quick_chat.hide()
        self.show_window()
        self.window.refresh_conversations(select=conversation_id)

    def _report_open(self, future) -> None:
        try:
            opened = future.result()
        except Exception as e:
            self.window.show_error(f"Could not open the data folder {self.home}: {e}")
            return
        if opened.problem is not None:
            self.window.show_error(opened.problem.message)

    # -- quitting ----------------------------------------------------------------------------------
    def quit(self) -> None:
        self.window.hide_on_close = False
        self.qapp.quit()

    def shutdown(self) -> None:
        """Stop running replies (stored `interrupted`), suspend sessions, close store and engine."""
        if self._closed:
            return
        self._closed = True
        self.window.commit_pending_deletes()
        self.quick_chat.hide()
        if self.tray is not None:
            self.tray.hide()
        self.local_server.close()  # its sessions are freed while the engine still runs
        self.bridge.close()
        if self.engine is not None:
            self.engine.close()


def _verb(source: str) -> str:
    """"connect to URL" for a server, "load SOURCE" for a local model (for messages)."""
    remote = parse_remote_source(source)
    return f"connect to {remote[0]}" if remote else f"load {source}"
