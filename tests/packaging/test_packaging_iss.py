"""Windows installer script, parsed dry (Inno Setup runs only on Windows): the sections and keys an
installer with a Start-menu entry and an uninstaller needs, and every file it takes exists where the
build puts it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
ISS = PACKAGING / "windows" / "confab.iss"


def parse() -> dict[str, list[str]]:
    """Section name -> its lines, with #define values substituted and comments dropped."""
    text = ISS.read_text(encoding="utf-8")
    defines = dict(re.findall(r'^\s*#define\s+(\w+)\s+"([^"]*)"', text, re.MULTILINE))
    sections: dict[str, list[str]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith((";", "#", "//")):
            continue
        if m := re.fullmatch(r"\[(\w+)\]", line):
            current = sections.setdefault(m.group(1), [])
            continue
        assert current is not None, f"line outside a section: {line}"
        current.append(re.sub(r"\{#(\w+)\}", lambda m: defines[m.group(1)], line))
    return sections


def setup() -> dict[str, str]:
    return dict(line.split("=", 1) for line in parse()["Setup"])


def entries(section: str) -> list[dict[str, str]]:
    """Parameter lines ("Name: value; Flags: x") as dicts."""
    rows = []
    for line in parse()[section]:
        parts = re.findall(r'(\w+):\s*("(?:[^"]|"")*"|[^;]+)', line)
        rows.append({k: v.strip().strip('"') for k, v in parts})
    return rows


def test_has_the_sections_of_an_installer():
    assert {"Setup", "Languages", "Files", "Icons", "Run"} <= parse().keys()


def test_setup_keys(build_info):
    keys = setup()
    for key in ("AppId", "AppName", "AppVersion", "DefaultDirName", "DefaultGroupName", "OutputDir",
                "OutputBaseFilename", "SetupIconFile", "UninstallDisplayIcon", "SourceDir"):
        assert keys.get(key), f"[Setup] {key} is missing"
    assert re.fullmatch(r"\{\{[0-9A-F-]{36}\}", keys["AppId"]), "AppId must be a fixed GUID (upgrades)"
    assert keys["UninstallDisplayIcon"].endswith(f"\\{build_info.EXE_NAME}.exe")


def test_start_menu_entry_and_uninstaller(build_info):
    icons = entries("Icons")
    starts = [i for i in icons if i["Name"].startswith("{group}") and i["Filename"] == f"{{app}}\\{build_info.EXE_NAME}.exe"]
    assert starts, "no Start-menu entry for the app"
    assert any(i["Filename"] == "{uninstallexe}" for i in icons), "no Start-menu entry for the uninstaller"


def test_referenced_files_exist_in_the_build_layout(build_info):
    source_dir = (ISS.parent / setup()["SourceDir"].replace("\\", "/")).resolve()
    assert source_dir == ROOT, "paths in the script are relative to the repository root"
    assert (source_dir / setup()["SetupIconFile"].replace("\\", "/")).is_file()
    # Files come from PyInstaller's COLLECT folder, as build_windows.ps1 lays it out.
    sources = [e["Source"].replace("\\", "/") for e in entries("Files")]
    assert sources == [f"build/dist/{build_info.EXE_NAME}/*"]
    script = (PACKAGING / "build_windows.ps1").read_text()
    assert "--distpath build\\dist" in script and "packaging\\windows\\confab.iss" in script


@pytest.mark.parametrize("section", ["Icons", "Run"])
def test_entries_run_the_installed_exe(section, build_info):
    targets = {e["Filename"] for e in entries(section)}
    assert f"{{app}}\\{build_info.EXE_NAME}.exe" in targets
