"""`ConfabApp`: the pieces of the running app and the wiring between them.

The window, the tray icon, the quick chat, settings and model loading each live in their own module;
this one only connects their signals, so the same app runs from `python -m app`, the self-test and
the UI benchmark.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QByteArray, QObject, QRect
from PySide6.QtWidgets import QApplication, QDialog

from app.bridge import Bridge
from app.chat.image_support import ImageSupport
from app.dialog_fit import DialogFit
from app.library.room import LibraryRoom
from app.mcp.room import McpRoom
from app.models.names import display_name
from app.models.connect_dialog import ConnectDialog
from app.settings.conversation_settings import ConversationSettingsDialog
from app.quick.macos import set_menubar_only
from app.file_dialogs import use_home
from app.quick.global_shortcut import GlobalShortcut
from app.models.serving import Serving
from app.window.main_window import MainWindow
from app.models.load_options import load_options, save_load_options
from app.models.loader import ModelLoader, close_in_background
from app.models.picker import ModelPickerDialog
from app.settings.preset_menu import PresetMenu
from app.qt_messages import install_message_filter
from app.quick.quick_chat import QuickChat
from app.window.quit_confirm import ask_quit
from app.resources import app_icon
from app.settings.app_settings import AppSettings, load_settings, sampling_params, save_settings
from app.settings.dialog import SettingsDialog
from app.store import Conversation, data_dir, prefix_cache_dir
from app.settings.theme import apply_theme
from app.quick.tray import Tray
from app.window.memory import WindowMemory, load_window_memory, save_window_memory
from engine import DEFAULT_MODEL, AnyEngine, EngineConfig, remote_source
from engine import parse_remote_source

log = logging.getLogger(__name__)


class ConfabApp(QObject):
    """Owns the bridge, the engine, the window, the tray and the quick chat of one running app."""

    def __init__(self, qapp: QApplication, home: Optional[Path], config: EngineConfig,
                 *, use_tray: bool = True) -> None:
        super().__init__()
        install_message_filter()
        self.qapp = qapp
        self.dialog_fit = DialogFit(self)
        qapp.installEventFilter(self.dialog_fit)  # every dialog whole, on its parent's screen
        self.home = home if home is not None else data_dir()
        self.config = config
        self.engine: Optional[AnyEngine] = None
        self.source = ""
        self.settings = load_settings(self.home)
        self.dark = apply_theme(qapp, self.settings.theme, self.settings.font_size)
        qapp.setWindowIcon(app_icon())
        self.bridge = Bridge(self.home, params=sampling_params({}, self.settings))
        self.window = MainWindow(self.bridge)
        self.mcp = McpRoom(self.window, self.bridge, self.home)
        """MCP tools in the chat window (app/mcp): servers from mcp.json, calls asked for first."""
        self.library = LibraryRoom(self.window, self.bridge)
        """Conversations' libraries (app/library): documents indexed beside the model, searched each turn."""
        self.window.chat_view.set_dark(self.dark)
        self.loader = ModelLoader(self.bridge.route, self)
        self.quick_chat = QuickChat(self.bridge)
        self.tray = Tray(self) if use_tray else None
        self.shortcut = GlobalShortcut(self)
        self.serving = Serving(self.bridge.route, self.window, lambda: self.settings, self.save_changed_settings,
                               self.library.embedder.get)  # /v1/embeddings: the library's one model
        """The local API: its server, status bar part, menu items and Server view."""
        self.local_server = self.serving.server
        self._closed = False
        self._quit_confirmed = False
        self._fall_back = False
        self.window.may_close = self.may_quit
        self.restore_window()
        self.setup_signals()
        self.setup_presets()
        self.apply_settings(self.settings)
        self.bridge.opened.add_done_callback(
            lambda f: self.bridge.route.post(self._report_open, f))

    def setup_signals(self) -> None:
        w = self.window
        w.load_model_requested.connect(self.pick_model)
        w.get_models_requested.connect(self.get_models)
        w.connect_requested.connect(self.connect_server)
        w.settings_requested.connect(self.edit_settings)
        w.conversation_settings_requested.connect(self.edit_conversation_settings)
        w.chat.new_settings_requested.connect(self.edit_new_conversation_settings)
        w.quit_requested.connect(self.quit)
        self.loader.progress.connect(w.set_progress)
        self.loader.loaded.connect(self._loaded)
        self.loader.failed.connect(self._load_failed)
        self.loader.draft_refused.connect(self._draft_refused)
        self.quick_chat.continue_requested.connect(self.continue_in_window)
        self.shortcut.activated.connect(self.show_quick_chat)
        self.quick_chat.reply_finished.connect(lambda _cid: w.refresh_conversations(passive=True))
        self.quick_chat.conversation_started.connect(lambda _cid: w.refresh_conversations(passive=True))
        if self.tray is not None:
            self.tray.quick_chat_requested.connect(self.show_quick_chat)
            self.tray.open_requested.connect(self.show_window)
            self.tray.quit_requested.connect(self.quit)
        self.qapp.aboutToQuit.connect(self.shutdown)

    def setup_presets(self) -> None:
        """File ▸ New conversation from preset, and the file pickers' memory, in this app's folder."""
        use_home(self.home)
        self.preset_menu = PresetMenu(self.home, self.window)
        self.preset_menu.chosen.connect(self.new_conversation_from_preset)
        self.window.file_menu.insertMenu(self.window.export_action, self.preset_menu)
        self.window.file_menu.insertSeparator(self.window.export_action)

    def new_conversation_from_preset(self, name: str, preset) -> None:
        """A new page whose first message creates a conversation with the preset's settings."""
        self.window.new_conversation()
        self.window.chat.set_new_settings(preset.system_prompt, preset.sampling)
        self.window.statusBar().showMessage(f"New conversation with the preset “{name}”", 5000)

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
        self.loader.load(source, self._config_for(source), api_key=self.settings.server_api_key or None)

    def _config_for(self, source: str) -> EngineConfig:
        """The engine's settings for `source`: its load options (Load model's, remembered per model)
        and a draft model (the command line's, else Settings', while drafting is on) for a model of
        this computer's; a server's model has its own."""
        if parse_remote_source(source):
            return replace(self.config, draft_model=None)
        draft = self.config.draft_model or (self.settings.draft_model if self.settings.speculative else None)
        return replace(load_options(self.home, source).applied_to(self.config), draft_model=draft,
                       prefix_cache_dir=str(prefix_cache_dir(self.home)),
                       prefix_cache_bytes=self.settings.prefix_cache_mb << 20)

    def pick_model(self) -> None:
        loaded = display_name(self.engine.model.name) if self.engine is not None else ""
        dialog = ModelPickerDialog(self.source, self.window, loaded_name=loaded, max_context=self.config.max_context,
                                   gpu_layers=self.config.gpu_layers, options_for=lambda s: load_options(self.home, s))
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.chosen_source():
            save_load_options(self.home, dialog.chosen_source(), dialog.chosen_options())
            self.load(dialog.chosen_source())

    def get_models(self) -> None:
        from app.models.get_models_dialog import GetModelsDialog

        dialog = GetModelsDialog(self.window, max_context=self.config.max_context)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.downloaded_source:
            self.load(dialog.downloaded_source)

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
        self._serve_api(engine)
        if old is not None:
            close_in_background(old)
        name = display_name(engine.model.name)
        precision = engine.dtype + (" · 4-bit weights" if engine.quantized else "")
        reason = engine.dtype_reason + (f"\nWeights: {engine.quantized}" if engine.quantized else "")
        kernel = getattr(engine, "kernel_check", None)  # llama.cpp's load-time check; None elsewhere
        self.window.set_model(name, engine.backend, engine.device, engine.capacity, engine.max_context,
                              precision, reason, getattr(engine, "backend_reason", ""),
                              kernel.note if kernel is not None else "", getattr(engine, "draft_model", ""),
                              getattr(engine, "placement", ""), getattr(engine, "placement_reason", ""))
        self.window.chat.think_switch.set_supported(getattr(engine, "thinking_switch", False))
        self.mcp.set_model(name)
        self.window.set_state("ready", "Model ready")  # its name is beside it, in the figures
        self.window.load_model_action.setEnabled(True)
        self.quick_chat.context_limit = engine.max_context
        counter = engine.count_tokens if engine.counts_tokens else None  # a remote engine cannot count
        self.window.set_token_counter(counter)
        self.quick_chat.files.set_counter(counter)
        images = ImageSupport.of(engine)  # whether it sees images, and what one costs it
        self.window.set_images(images)
        self.quick_chat.files.set_images(images)
        self.quick_chat.set_ready(True)

    def _load_failed(self, source: str, message: str) -> None:
        self.window.load_model_action.setEnabled(True)
        title = f"Could not {_verb(source)}"
        self._serve_api(self.engine)  # the previous model, if any, serves again
        if self.engine is None and self._fall_back and source != DEFAULT_MODEL:
            again = " (Model ▸ Connect to server… tries again)" if parse_remote_source(source) else ""
            self.window.show_load_error(f"{title}. Loading the bundled model instead{again}.", message)
            self.load(DEFAULT_MODEL)
        elif self.engine is None:
            self.window.set_state("failed", f"{title}: {message}")
            self.window.show_load_error(f"{title}. No model is loaded: choose one in Model ▸ Load model…", message)
            self.quick_chat.set_ready(False, "No model is loaded")
        else:  # the previous model stays loaded and usable
            self.window.set_state("ready", "")
            self.window.show_load_error(f"{title}. Still using {display_name(self.engine.model.name)}.", message)

    def _serve_api(self, engine: Optional[AnyEngine]) -> None:
        """The local API serves this process's own engine; while a server's model is in use it is
        paused and says so (app/models/local_server.py says why it does not relay)."""
        remote = parse_remote_source(self.source) if engine is not None and not engine.is_local else None
        if remote is not None:
            self.local_server.pause(remote[0])
        else:
            self.local_server.set_engine(engine if engine is not None and engine.is_local else None)

    # -- settings ----------------------------------------------------------------------------------
    def settings_dialog(self) -> SettingsDialog:
        """Settings…, showing the settings and, beside them, what the local API really does."""
        dialog = SettingsDialog(self.settings, self.home, Tray.available(), self.window, self.shortcut.status)
        dialog.local_server.show_state(*self.local_server.state(), network_address=self.local_server.network_address)
        return dialog

    def _draft_refused(self, why: str, file_failed: bool) -> None:
        """Say why the draft model was not used. One whose file failed is not tried again at every
        start: drafting is turned off in Settings (its path kept, to fix and turn on again; every
        other setting as it was). One that only does not fit this model stays for the next."""
        title = "The draft model was not used; the model runs without it."
        if file_failed and self.settings.speculative and self.settings.draft_model and not self.config.draft_model:
            self.settings = replace(self.settings, speculative=False)
            save_settings(self.home, self.settings)
            title += " Drafting is now off in Settings: fix the draft model there and turn it on again."
        self.window.show_load_error(title, why, "Could not use the draft model")

    def edit_settings(self) -> None:
        dialog = self.settings_dialog()
        if dialog.exec() == QDialog.DialogCode.Accepted:
            before = self._config_for(self.source).draft_model if self.source else None
            self.apply_settings(dialog.result_settings())
            save_settings(self.home, self.settings)
            if self.engine is not None and self.engine.is_local and self._config_for(self.source).draft_model != before:
                self.load(self.source)  # the draft model is part of the engine: load it again with or without

    def apply_settings(self, settings: AppSettings) -> None:
        self.settings = settings
        self.dark = apply_theme(self.qapp, settings.theme, settings.font_size)
        self.window.chat_view.set_dark(self.dark)
        self.bridge.params = sampling_params({}, settings)
        self.window.chat.files.tray.keep_bytes = settings.keep_attachment_files
        self.quick_chat.files.keep_bytes = settings.keep_attachment_files
        self.window.hide_on_close = bool(settings.close_to_tray and self.tray is not None and self.tray.visible)
        if self.tray is not None and self.tray.visible:  # never hide the Dock icon with no way back
            set_menubar_only(settings.menubar_only)
        if settings.quick_chat_shortcut != self.shortcut.shortcut or not self.shortcut.active:
            self.shortcut.set_shortcut(settings.quick_chat_shortcut)
        self.serving.apply(settings)

    def save_changed_settings(self, settings: AppSettings) -> None:
        """Settings changed outside the Settings dialog (the Server view): applied, then saved."""
        self.apply_settings(settings)
        save_settings(self.home, self.settings)

    def edit_conversation_settings(self, conversation_id: int) -> None:
        self.bridge.run(lambda store: store.get_conversation(conversation_id)).success(self._show_conversation_settings)

    def _show_conversation_settings(self, conversation) -> None:
        dialog = ConversationSettingsDialog(conversation, self.settings, self.window, home=self.home)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            system_prompt, sampling = dialog.result()
            self.bridge.run(lambda store: store.update_conversation(
                conversation.id, system_prompt=system_prompt, sampling=sampling)).success(
                lambda c: self.window.chat.show_prompt_of(c.id))

    def edit_new_conversation_settings(self) -> None:
        """Settings for the conversation the next first message creates (a preset, say)."""
        prompt, sampling = self.window.chat.new_settings
        draft = Conversation(id=0, title="", created_at=0.0, updated_at=0.0, pinned=False, model=None,
                             system_prompt=prompt, sampling=sampling)
        dialog = ConversationSettingsDialog(draft, self.settings, self.window, home=self.home, new=True)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.window.chat.set_new_settings(*dialog.result())

    # -- windows -----------------------------------------------------------------------------------
    def show_window(self) -> None:
        self.window.show()
        self.window.setWindowState(self.window.windowState() & ~self.window.windowState().WindowMinimized)
        self.window.raise_()
        self.window.activateWindow()

    def restore_window(self) -> None:
        """Size, place and splitter as they were, and the last open conversation, if it still exists."""
        memory = load_window_memory(self.home)
        if memory.geometry is not None:
            self.window.restoreGeometry(QByteArray(memory.geometry))
        if memory.splitter is not None:
            self.window.splitter.restoreState(QByteArray(memory.splitter))
        last = memory.last_conversation
        if last is not None:
            self.bridge.run(lambda store: store.get_conversation(last).id).success(
                lambda cid: self.window.refresh_conversations(select=cid)).failure(lambda _gone: None)

    def remember_window(self) -> None:
        save_window_memory(self.home, WindowMemory(
            bytes(self.window.saveGeometry().data()), bytes(self.window.splitter.saveState().data()),
            self.window.current_id or self.window.last_open_id))

    def show_quick_chat(self, geometry: Optional[QRect] = None) -> None:
        """By the tray icon: where it was clicked, or (the hotkey gives no place) where the icon is,
        so the panel opens beside the icon instead of over it."""
        if (geometry is None or not geometry.isValid()) and self.tray is not None:
            geometry = self.tray.geometry()
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
        if not self.may_quit():
            return
        self.window.hide_on_close = False
        self.qapp.quit()

    def may_quit(self) -> bool:
        """True when quitting may go on: no reply is being written, the user said so, or they
        turned the question off. Asked once: closing the window then quitting asks no second time."""
        replies = len(self.bridge.replying())
        if self._quit_confirmed or not replies or not self.settings.confirm_quit:
            return True
        self.show_window()
        go, stop_asking = ask_quit(self.window, replies)
        if stop_asking:
            self.settings = replace(self.settings, confirm_quit=False)
            save_settings(self.home, self.settings)
        self._quit_confirmed = go
        return go

    def shutdown(self) -> None:
        """Stop running replies (stored `interrupted`), suspend sessions, close store and engine."""
        if self._closed:
            return
        self._closed = True
        self.qapp.removeEventFilter(self.dialog_fit)
        self.window.commit_pending_deletes()
        try:
            self.remember_window()
        except Exception:  # never keep the app from quitting over its window's layout
            log.warning("could not remember the window's layout", exc_info=True)
        self.quick_chat.hide()
        self.shortcut.stop()
        if self.tray is not None:
            self.tray.hide()
        self.local_server.close()  # its sessions are freed while the engine still runs
        self.mcp.close()  # MCP servers' processes end
        self.library.close()  # indexing stops (a file half done is marked at the next start)
        self.bridge.close()
        if self.engine is not None:
            self.engine.close()


def _verb(source: str) -> str:
    """"connect to URL" for a server, "load SOURCE" for a local model (for messages)."""
    remote = parse_remote_source(source)
    return f"connect to {remote[0]}" if remote else f"load {source}"
