#!/usr/bin/env bash
# Build Confab for macOS: Confab.app (PyInstaller BUNDLE) in a compressed .dmg.
#
#   packaging/build_macos.sh                          # a normal app: Dock icon and menu bar
#   CONFAB_MENUBAR_ONLY=1 packaging/build_macos.sh    # menubar-only: LSUIElement in Info.plist
#
# Outputs: build/dist/Confab.app, build/Confab-<version>-<arch>.dmg
# Needs: macOS 12+, Xcode command line tools (hdiutil, codesign, plutil ship with macOS), a Python
# 3.11+ venv in .venv with the app installed (on Apple Silicon that brings MLX, not torch).
# The Info.plist comes from packaging/macos/Info.plist through build_info.info_plist().
#
# Signing and notarization (not done by this script; needed before others can open the app without
# Gatekeeper's warning):
#   1. Sign with a "Developer ID Application" certificate, hardened runtime, inside-out:
#        codesign --force --deep --options runtime --timestamp \
#            --entitlements packaging/macos/entitlements.plist \
#            --sign "Developer ID Application: NAME (TEAMID)" build/dist/Confab.app
#      (PyInstaller's bootloader and torch need the entitlements in that file: unsigned executable
#      memory and library validation off for the bundled Python extension modules.)
#   2. Build the .dmg (below) and sign it too: codesign --sign "Developer ID Application: …" the.dmg
#   3. Notarize and staple:
#        xcrun notarytool submit build/Confab-*.dmg --keychain-profile NOTARY --wait
#        xcrun stapler staple build/Confab-*.dmg
#      (`xcrun notarytool store-credentials NOTARY` once, with an app-specific password.)
# Without a certificate the script signs ad hoc (codesign -s -), enough to run on the build machine.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-.venv/bin/python}"
BUILD="$ROOT/build"
[ "$(uname -s)" = Darwin ] || { echo "build_macos.sh runs on macOS only" >&2; exit 1; }

"$PY" -m PyInstaller --version >/dev/null 2>&1 || "$PY" -m pip install --quiet pyinstaller
VERSION="$("$PY" -c 'import sys; sys.path.insert(0, "packaging"); import build_info; print(build_info.version())')"
ARCH="$(uname -m)"

# resources/icons/confab.icns is built by packaging/make_icons.py (Pillow); Apple's own tool gives
# the same result from the iconset next to it, if preferred:
if [ "${CONFAB_ICONUTIL:-0}" = 1 ]; then
    iconutil -c icns resources/icons/confab.iconset -o resources/icons/confab.icns
fi

echo "== llama.cpp for the installer (portable build, Metal on; cached in build/llama-portable)"
CONFAB_LLAMA_DIR="$("$PY" packaging/build_llama.py)"
export CONFAB_LLAMA_DIR

echo "== PyInstaller: Confab $VERSION ($ARCH)$([ "${CONFAB_MENUBAR_ONLY:-0}" = 1 ] && echo ', menubar-only')"
"$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$BUILD/dist" --workpath "$BUILD/work" packaging/confab.spec
APP="$BUILD/dist/Confab.app"
plutil -lint "$APP/Contents/Info.plist"

IDENTITY="${CONFAB_SIGN_IDENTITY:--}"
codesign --force --deep --options runtime --timestamp=none \
    --entitlements packaging/macos/entitlements.plist --sign "$IDENTITY" "$APP"
codesign --verify --deep --strict "$APP"

echo "== .dmg"
STAGE="$BUILD/dmg"
rm -rf "$STAGE"
mkdir -p "$STAGE"
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"  # drag Confab onto it to install
DMG="$BUILD/Confab-$VERSION-$ARCH.dmg"
rm -f "$DMG"
hdiutil create -volname "Confab $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG"
echo "built $DMG ($(du -h "$DMG" | cut -f1))"

"$APP/Contents/MacOS/confab" --self-test
