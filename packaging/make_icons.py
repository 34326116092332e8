"""Render resources/confab.svg into the icon files each platform's installer needs.

    .venv/bin/pip install pillow            # build-time only, like PyInstaller
    .venv/bin/python packaging/make_icons.py

Writes resources/icons/: confab-<size>.png (Linux hicolor theme and AppDir), confab.ico (Windows:
the executable and the installer), confab.icns (macOS bundle) and confab.iconset/ (the same PNGs
under the names macOS's `iconutil -c icns` expects, should a Mac build prefer Apple's tool).
The SVG is drawn with Qt's own renderer (already an app dependency); Pillow packs the ICO and ICNS.
Run it again whenever the SVG changes and commit the results.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "confab.svg"
OUT = ROOT / "resources" / "icons"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512, 1024)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICONSET = {  # iconutil's file names -> pixel size
    f"icon_{s}x{s}{'@2x' if k == 2 else ''}.png": s * k for s in (16, 32, 128, 256, 512) for k in (1, 2)
}


def render(renderer: QSvgRenderer, size: int) -> bytes:
    """The SVG drawn at `size` x `size` as PNG bytes (premultiplied alpha, antialiased)."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - Qt needs one
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        print(f"cannot render {SVG}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    pngs = {size: render(renderer, size) for size in PNG_SIZES}
    for size, data in pngs.items():
        (OUT / f"confab-{size}.png").write_bytes(data)
    iconset = OUT / "confab.iconset"
    iconset.mkdir(exist_ok=True)
    for name, size in ICONSET.items():
        (iconset / name).write_bytes(pngs[size])
    images = {size: Image.open(io.BytesIO(data)) for size, data in pngs.items()}
    largest = images[max(ICO_SIZES)]
    largest.save(OUT / "confab.ico", sizes=[(s, s) for s in ICO_SIZES],
                 append_images=[images[s] for s in ICO_SIZES if s != max(ICO_SIZES)])
    images[1024].save(OUT / "confab.icns", append_images=[images[s] for s in (16, 32, 64, 128, 256, 512)])
    print(f"wrote {len(pngs)} PNGs, confab.ico, confab.icns and confab.iconset/ to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
