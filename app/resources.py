"""Files shipped with the app (the icon), found the same way from a checkout and from a frozen build.

    path = resource_path("confab.svg")     # FileNotFoundError names every place it looked
    window.setWindowIcon(app_icon())      # needs a QGuiApplication
    button.setIcon(ui_icon("paperclip"))  # resources/ui/paperclip.svg: no emoji font needed

From source the files sit in `resources/` next to the `app` package; a PyInstaller build unpacks its
data under `sys._MEIPASS`, so the spec adds `("resources", "resources")` to `datas`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

RESOURCES_DIR = "resources"
ICON_NAME = "confab.svg"
ICON_SIZES = (16, 32, 64, 128, 256)
"""Pixel sizes rendered into the app icon: tray icons and some platforms ask for a pixmap, not SVG."""
UI_ICONS = "ui"
"""Folder (under resources/) of the small SVG icons the window uses where an emoji would need a
font that many machines lack (📎, 📄, 📕, ⚠ drew as empty boxes there)."""


def resource_dirs() -> list[Path]:
    """Where resources may be, most specific first: a frozen build's folders, then the source tree."""
    dirs: list[Path] = []
    if getattr(sys, "frozen", False):
        bundle = getattr(sys, "_MEIPASS", None)
        if bundle:
            dirs.append(Path(bundle) / RESOURCES_DIR)
        dirs.append(Path(sys.executable).resolve().parent / RESOURCES_DIR)
    dirs.append(Path(__file__).resolve().parent.parent / RESOURCES_DIR)
    return dirs


def resource_path(name: str) -> Path:
    """The file `name` under the first resources folder that has it."""
    for folder in resource_dirs():
        path = folder / name
        if path.is_file():
            return path
    looked = ", ".join(str(d) for d in resource_dirs())
    raise FileNotFoundError(f"Resource {name!r} is missing; looked in: {looked}")


def app_icon() -> QIcon:
    """Confab's icon: the SVG (sharp at any size) plus pixmaps rendered at `ICON_SIZES`."""
    path = resource_path(ICON_NAME)
    icon = QIcon()
    icon.addFile(str(path))
    renderer = QSvgRenderer(str(path))
    if renderer.isValid():
        for size in ICON_SIZES:
            icon.addPixmap(_render(renderer, size))
    return icon


def ui_icon(name: str) -> QIcon:
    """The window's icon `name` (resources/ui/<name>.svg), sharp at any size."""
    icon = QIcon()
    icon.addFile(str(resource_path(f"{UI_ICONS}/{name}.svg")))
    return icon


def ui_pixmap(name: str, size: int) -> QPixmap:
    """The icon `name` as a `size`-pixel pixmap (for a label, or an image in rich text)."""
    renderer = QSvgRenderer(str(resource_path(f"{UI_ICONS}/{name}.svg")))
    return _render(renderer, size)


def _render(renderer: QSvgRenderer, size: int) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return pixmap
