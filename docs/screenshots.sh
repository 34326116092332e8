#!/usr/bin/env bash
# Screenshots for the README: the main window (light, dark), the quick chat, a reply's versions with
# Continue (versions.png), a thinking model's reply (reasoning.png), attached files (attachments.png),
# the Server view on the local network (server.png), a conversation's library (library-*.png) and Get
# models…, on a sample data folder, in real windows on a virtual display.
# Needs Xvfb and the X11 libraries of Qt's xcb plugin (Debian/Ubuntu: apt-get install xvfb
# libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxkbcommon-x11-0). The window has its default size.
# PYTHON=… runs them with a Python that already has Confab's dependencies (no set-up first).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  python3 bootstrap.py setup
  PYTHON=.venv/bin/python
fi
shot() { xvfb-run -a -s "-screen 0 1280x800x24" "$PYTHON" -m "$@" docs; }
shot app.devtools.screenshots
shot app.devtools.screenshots_versions
shot app.devtools.screenshots_reasoning
shot app.devtools.screenshots_attachments
shot app.devtools.screenshots_server
shot app.devtools.screenshots_library
# Model ▸ Get models… mid-download, against the tests' fake Hub (no network).
shot tests.hub.screenshot_get_models
