#!/usr/bin/env bash
# Screenshots for the README: the main window (light, dark), the quick chat, a reply's versions with
# Continue (versions.png), a thinking model's reply (reasoning.png), attached files (attachments.png),
# a conversation's library (library-*.png) and Get models…, on a sample data folder, in real windows on a virtual display.
# Needs Xvfb and the X11 libraries of Qt's xcb plugin (Debian/Ubuntu: apt-get install xvfb
# libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0). The window has its default size.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bootstrap.py setup
xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app.devtools.screenshots docs
xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app.devtools.screenshots_versions docs
xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app.devtools.screenshots_reasoning docs
xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app.devtools.screenshots_attachments docs
xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m app.devtools.screenshots_library docs
# Model ▸ Get models… mid-download, against the tests' fake Hub (no network).
exec xvfb-run -a -s "-screen 0 1280x800x24" .venv/bin/python -m tests.hub.screenshot_get_models docs
