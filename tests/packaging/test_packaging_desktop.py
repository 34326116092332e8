"""Linux desktop entry and icons: what the .deb and the AppDir install is valid and consistent.

desktop-file-validate (Debian: desktop-file-utils) checks the entry when it is installed;
packaging/check_linux.sh installs it and validates the entry inside the built package too.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
DESKTOP = PACKAGING / "linux" / "confab.desktop"


def entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(DESKTOP)
    return parser["Desktop Entry"]


def test_desktop_entry_is_valid():
    validator = shutil.which("desktop-file-validate")
    if validator:
        result = subprocess.run([validator, str(DESKTOP)], capture_output=True, text=True, check=False)
        assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr
    # Without the tool: the keys it would insist on.
    keys = entry()
    assert keys["Type"] == "Application" and keys["Name"] == "Confab"
    assert keys["Categories"].endswith(";") and keys["Terminal"] == "false"


def test_entry_starts_the_installed_command_with_the_installed_icon(build_info):
    keys = entry()
    assert keys["Exec"].split()[0] == build_info.EXE_NAME  # /usr/bin/confab
    assert keys["Icon"] == "confab"  # usr/share/icons/hicolor/<size>/apps/confab.png


@pytest.mark.parametrize("size", [16, 24, 32, 48, 64, 128, 256, 512])
def test_every_icon_the_package_installs_exists(size):
    png = ROOT / "resources" / "icons" / f"confab-{size}.png"
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(header[16:20], "big") == int.from_bytes(header[20:24], "big") == size


def test_apprun_starts_the_frozen_app():
    apprun = PACKAGING / "linux" / "AppRun"
    assert os.access(apprun, os.X_OK)
    assert "usr/lib/confab/confab" in apprun.read_text()


def test_control_file_names_the_package(build_info):
    fields = dict(line.split(": ", 1) for line in (PACKAGING / "linux" / "control").read_text().splitlines()
                  if ": " in line and not line.startswith(" "))
    assert fields["Package"] == "confab"
    assert {"Version", "Architecture", "Maintainer", "Description", "Depends"} <= fields.keys()
