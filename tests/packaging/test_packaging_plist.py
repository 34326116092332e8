"""macOS Info.plist: the template parses, carries the keys a bundle needs, and menubar-only builds
get LSUIElement (no Dock icon) while normal builds do not. Python's plistlib stands in for plutil."""

from __future__ import annotations

import plistlib
from pathlib import Path

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"
REQUIRED = ("CFBundleName", "CFBundleDisplayName", "CFBundleIdentifier", "CFBundlePackageType",
            "CFBundleShortVersionString", "CFBundleVersion", "CFBundleInfoDictionaryVersion",
            "LSMinimumSystemVersion", "NSHighResolutionCapable")


def test_template_is_a_valid_plist_with_the_required_keys():
    plist = plistlib.loads((PACKAGING / "macos" / "Info.plist").read_bytes())
    assert set(REQUIRED) <= plist.keys()
    assert plist["CFBundlePackageType"] == "APPL"
    # PyInstaller's BUNDLE names the executable and icon files; the template must not override them.
    assert "CFBundleExecutable" not in plist and "CFBundleIconFile" not in plist


def test_version_comes_from_pyproject(build_info):
    plist = build_info.info_plist(menubar_only=False)
    assert plist["CFBundleShortVersionString"] == plist["CFBundleVersion"] == build_info.version()
    assert "@VERSION@" not in plistlib.dumps(plist).decode()


def test_menubar_only_build_hides_the_dock_icon(build_info):
    assert build_info.info_plist(menubar_only=True)["LSUIElement"] is True
    assert "LSUIElement" not in build_info.info_plist(menubar_only=False)


def test_menubar_only_is_chosen_at_build_time(build_info, monkeypatch):
    monkeypatch.setenv("CONFAB_MENUBAR_ONLY", "1")
    assert build_info.menubar_only()
    monkeypatch.setenv("CONFAB_MENUBAR_ONLY", "0")
    assert not build_info.menubar_only()


def test_filled_plist_round_trips(build_info):
    plist = build_info.info_plist(menubar_only=True)
    assert plistlib.loads(plistlib.dumps(plist)) == plist


def test_entitlements_parse():
    entitlements = plistlib.loads((PACKAGING / "macos" / "entitlements.plist").read_bytes())
    assert entitlements["com.apple.security.cs.disable-library-validation"] is True
