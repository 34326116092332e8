"""The local API in the running app: the server, its part of the status bar (a click opens the
Server view), its Model menu items, and the Server view, made when first opened.

    serving = Serving(route, window, lambda: app.settings, app.save_changed_settings)
    serving.apply(settings)                  # the settings' api_* fields, at start and after a change
    serving.show_view()                      # Model ▸ Local API server…, or a click on "API on :8317"

Every change the Server view makes goes through the app's settings (`change`): applied, saved, the
same path as Settings ▸ Local API server, so the choice comes back after a restart.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional

from PySide6.QtCore import QObject

from app.bridge import GuiRoute
from app.models.local_server import LocalServer
from app.settings.app_settings import AppSettings

if TYPE_CHECKING:
    from app.models.server_view import ServerView
    from app.window.main_window import MainWindow
    from engine import Embedder


class Serving(QObject):
    """Owns the `LocalServer` and its window; `settings()` reads the app's settings, `change(new)`
    applies and saves new ones."""

    def __init__(self, route: GuiRoute, window: "MainWindow", settings: Callable[[], AppSettings],
                 change: Callable[[AppSettings], None], embedder: Optional[Callable[[], "Embedder"]] = None) -> None:
        super().__init__(window)
        self._window, self._settings, self._change = window, settings, change
        self.server = LocalServer(route, self, embedder)
        self.view: Optional["ServerView"] = None
        window.add_status_part(self.server.label)
        self.server.label.clicked.connect(self.show_view)
        self.server.failed.connect(window.show_error)
        window.model_menu.addAction("Local API &server…", self.show_view)
        window.model_menu.addAction("Serve on the local &network…", self.show_network_choice)

    def apply(self, settings: AppSettings) -> None:
        self.server.apply(settings.api_server, settings.api_port, settings.api_key, settings.api_host)

    def change(self, **fields) -> None:
        """Some api_* settings changed in the Server view: applied and saved with the others."""
        self._change(replace(self._settings(), **fields))

    def show_view(self) -> None:
        """The local API's state, its switch, who may connect and its live request log."""
        if self.view is None:
            from app.models.server_view import ServerView

            self.view = ServerView(self.server, self._settings, self.change, self._window)
        self.view.show()
        self.view.raise_()
        self.view.activateWindow()

    def show_network_choice(self) -> None:
        self.show_view()
        self.view.show_network_choice()
