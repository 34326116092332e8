"""Shipped files are found from the source tree and from a frozen build; the app icon loads."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app import resources  # noqa: E402
from app.resources import ICON_SIZES, app_icon, resource_path  # noqa: E402


def test_resource_path_finds_the_icon_from_source():
    path = resource_path("confab.svg")
    assert path.is_file() and path.read_text().lstrip().startswith("<svg")


def test_a_missing_resource_names_where_it_looked():
    with pytest.raises(FileNotFoundError, match="nope.svg.*looked in"):
        resource_path("nope.svg")


def test_a_frozen_build_looks_in_its_bundle_first(tmp_path, monkeypatch):
    bundled = tmp_path / "resources" / "confab.svg"
    bundled.parent.mkdir()
    bundled.write_text("<svg/>")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resource_path("confab.svg") == bundled
    assert resources.resource_dirs()[-1] == Path(resources.__file__).resolve().parent.parent / "resources"


def test_app_icon_has_every_size(qapp):
    icon = app_icon()
    assert not icon.isNull()
    for size in ICON_SIZES:
        pixmap = icon.pixmap(size, size)
        assert not pixmap.isNull() and pixmap.width() == size
        assert pixmap.toImage().pixelColor(size // 2, size // 2).alpha() == 255  # drawn, not blank


@pytest.mark.parametrize("name", ["paperclip", "file-text", "file-pdf", "warning", "settings"])
def test_the_window_icons_are_shipped_svgs_that_render(qapp, name):
    from app.resources import ui_icon, ui_pixmap

    assert resource_path(f"ui/{name}.svg").read_text().lstrip().startswith("<svg")
    assert not ui_icon(name).isNull()
    image = ui_pixmap(name, 16).toImage()
    assert any(image.pixelColor(x, y).alpha() > 0 for x in range(16) for y in range(16))  # draws something
