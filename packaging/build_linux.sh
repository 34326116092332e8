#!/usr/bin/env bash
# Build Confab for Linux: PyInstaller one-folder build, an AppImage-style folder and a .deb.
#
#   packaging/build_linux.sh            # from the repository root, with the app installed in .venv
#
# Outputs under build/:
#   dist/confab/                 the frozen app (run dist/confab/confab)
#   Confab.AppDir/               AppRun + confab.desktop + confab.png + usr/; appimagetool, when it is
#                                on PATH, packs it into Confab-<version>-<arch>.AppImage
#   confab_<version>_<arch>.deb  /usr/bin/confab, /usr/lib/confab, desktop entry and hicolor icons
# Needs: Python 3.11+ venv in .venv with the app installed; dpkg-deb (Debian's dpkg package); a C/C++
# compiler and CMake (llama.cpp is built for the installer by packaging/build_llama.py).
# PyInstaller is installed here, into .venv: it is a build tool, not an app dependency.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-.venv/bin/python}"
BUILD="$ROOT/build"

command -v dpkg-deb >/dev/null || { echo "dpkg-deb is missing (apt-get install dpkg)" >&2; exit 1; }
"$PY" -m PyInstaller --version >/dev/null 2>&1 || "$PY" -m pip install --quiet pyinstaller

VERSION="$("$PY" -c 'import sys; sys.path.insert(0, "packaging"); import build_info; print(build_info.version())')"
ARCH="$(dpkg --print-architecture)"

echo "== llama.cpp for the installer (portable CPU build, cached in build/llama-portable)"
CONFAB_LLAMA_DIR="$("$PY" packaging/build_llama.py)"
export CONFAB_LLAMA_DIR

echo "== PyInstaller: Confab $VERSION ($ARCH)"
"$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$BUILD/dist" --workpath "$BUILD/work" packaging/confab.spec
APP="$BUILD/dist/confab"

# The same tree serves the AppDir (under usr/) and the .deb (under /): install it into a root.
install_tree() {  # $1 = root folder
    local root="$1"
    mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/share/applications"
    cp -a "$APP" "$root/usr/lib/confab"
    ln -sf ../lib/confab/confab "$root/usr/bin/confab"
    install -m 644 packaging/linux/confab.desktop "$root/usr/share/applications/confab.desktop"
    for size in 16 24 32 48 64 128 256 512; do
        install -D -m 644 "resources/icons/confab-$size.png" \
            "$root/usr/share/icons/hicolor/${size}x${size}/apps/confab.png"
    done
    install -D -m 644 resources/confab.svg "$root/usr/share/icons/hicolor/scalable/apps/confab.svg"
}

echo "== AppDir"
APPDIR="$BUILD/Confab.AppDir"
rm -rf "$APPDIR"
install_tree "$APPDIR"
install -m 755 packaging/linux/AppRun "$APPDIR/AppRun"
cp packaging/linux/confab.desktop "$APPDIR/confab.desktop"
cp resources/icons/confab-256.png "$APPDIR/confab.png"
ln -sf confab.png "$APPDIR/.DirIcon"
if command -v appimagetool >/dev/null; then
    ARCH="$(uname -m)" appimagetool "$APPDIR" "$BUILD/Confab-$VERSION-$(uname -m).AppImage"
else
    echo "   (appimagetool not on PATH: left the AppDir unpacked; run it with $APPDIR/AppRun)"
fi

echo "== .deb"
DEBROOT="$BUILD/deb"
rm -rf "$DEBROOT"
install_tree "$DEBROOT"
mkdir -p "$DEBROOT/DEBIAN"
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" \
    -e "s/@SIZE_KB@/$(du -sk --exclude=DEBIAN "$DEBROOT" | cut -f1)/" \
    packaging/linux/control > "$DEBROOT/DEBIAN/control"
DEB="$BUILD/confab_${VERSION}_${ARCH}.deb"
# xz: smallest, readable by every dpkg; it is most of the build time on a slow machine (about 15 min of
# CPU for the ~1.1 GB tree). CONFAB_DEB_COMPRESSION=zstd is much faster (needs dpkg 1.21.18+ to install).
dpkg-deb --root-owner-group -Z"${CONFAB_DEB_COMPRESSION:-xz}" --build "$DEBROOT" "$DEB"
echo "built $DEB ($(du -h "$DEB" | cut -f1))"
