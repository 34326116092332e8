#!/usr/bin/env bash
# The slow, real check of the Linux package (minutes; not part of the pytest suite):
#   build the .deb, unpack it into a throw-away root with `dpkg -x`, check llama.cpp's library and the
#   bundled GGUF are in it, run the installed binary's --self-test (which loads that library and fails
#   unless the bundled model runs on it) offscreen with its data and
#   cache in temporary folders, validate the installed desktop entry, and print the build time and
#   the package size.
#
#   packaging/check_linux.sh                      # builds first
#   CONFAB_SKIP_BUILD=1 packaging/check_linux.sh  # checks the .deb already in build/
#
# Needs desktop-file-validate (Debian: desktop-file-utils); installed with apt-get when run as root.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! command -v desktop-file-validate >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq desktop-file-utils >/dev/null
    else
        echo "desktop-file-validate is missing: sudo apt-get install desktop-file-utils" >&2
        exit 1
    fi
fi

started=$(date +%s)
if [ "${CONFAB_SKIP_BUILD:-0}" != 1 ]; then
    packaging/build_linux.sh
fi
build_s=$(( $(date +%s) - started ))

VERSION="$(.venv/bin/python -c 'import sys; sys.path.insert(0, "packaging"); import build_info; print(build_info.version())')"
DEB="build/confab_${VERSION}_$(dpkg --print-architecture).deb"
[ -f "$DEB" ] || { echo "no package at $DEB" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
dpkg -x "$DEB" "$TMP/root"
echo "== unpacked $DEB into a throw-away root"

fail() { echo "check FAILED: $*" >&2; exit 1; }
[ -x "$TMP/root/usr/bin/confab" ] || fail "/usr/bin/confab is missing or not executable"
[ -x "$TMP/root/usr/lib/confab/confab" ] || fail "/usr/lib/confab/confab is missing"
for size in 16 32 48 64 128 256 512; do
    [ -f "$TMP/root/usr/share/icons/hicolor/${size}x${size}/apps/confab.png" ] || fail "no ${size}px icon"
done
ls "$TMP/root/usr/lib/confab/_internal/models/smollm2-135m-instruct/"*.gguf >/dev/null 2>&1 \
    || fail "the bundled GGUF is missing (usr/lib/confab/_internal/models/smollm2-135m-instruct)"
ls "$TMP/root/usr/lib/confab/_internal/llama_cpp/lib/"libllama.* >/dev/null 2>&1 \
    || fail "llama.cpp's library is missing (usr/lib/confab/_internal/llama_cpp/lib)"
desktop-file-validate "$TMP/root/usr/share/applications/confab.desktop" || fail "desktop entry is invalid"
echo "desktop-file-validate: usr/share/applications/confab.desktop is valid"

echo "== installed binary: confab --self-test"
mkdir -p "$TMP/home" "$TMP/cache"
self_started=$(date +%s)
env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM=offscreen \
    CONFAB_HOME="$TMP/home" CONFAB_CACHE="$TMP/cache" \
    "$TMP/root/usr/bin/confab" --self-test || fail "the installed binary's self-test failed"
self_s=$(( $(date +%s) - self_started ))
# The GGUF ships with its tokenizer read: nothing may have been converted or read into the (empty) cache.
[ -z "$(ls -A "$TMP/cache")" ] || fail "the frozen app converted a model instead of using the shipped one"

echo "== summary"
echo "build time:     ${build_s} s$([ "${CONFAB_SKIP_BUILD:-0}" = 1 ] && echo ' (build skipped)')"
echo "package:        $DEB $(du -h "$DEB" | cut -f1) ($(stat -c %s "$DEB") bytes)"
echo "installed size: $(du -sh "$TMP/root/usr/lib/confab" | cut -f1) under /usr/lib/confab"
echo "llama.cpp:      $(du -ch "$TMP/root/usr/lib/confab/_internal/llama_cpp/lib/"* | tail -1 | cut -f1) in _internal/llama_cpp/lib"
echo "self-test:      passed in ${self_s} s"
