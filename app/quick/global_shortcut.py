"""A keyboard shortcut that opens the quick chat from any program (default Ctrl+Alt+Space).

    shortcut = GlobalShortcut()
    shortcut.activated.connect(app.show_quick_chat)
    ok = shortcut.set_shortcut("Ctrl+Alt+Space")   # False when the platform does not allow it
    shortcut.status                                # says which, in words for Settings

Qt has no global hotkey API. On X11 this grabs the key on the root window with python-xlib (pure
Python; the grab delivers only that one key combination, never other typing) on a connection and a
thread of its own; the thread hands each press to the GUI thread through a queued signal. Wayland
does not let a program grab keys, and macOS and Windows are not implemented yet: there, and whenever
the grab fails (another program holds the keys, no X server), nothing breaks and `status` says why.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from typing import Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence

DEFAULT_SHORTCUT = "Alt+Space" if sys.platform == "darwin" else "Ctrl+Alt+Space"
"""⌥Space on macOS (Qt writes Option as Alt), Ctrl+Alt+Space elsewhere."""
POLL_S = 0.25
"""How often the grab thread checks whether it should stop."""


class ShortcutError(Exception):
    """Why a shortcut cannot be used, in words for the Settings dialog."""


def unavailable_reason(platform_name: str, env: Optional[dict] = None) -> Optional[str]:
    """Why this platform cannot have a global shortcut (None: it can try)."""
    env = os.environ if env is None else env
    if sys.platform == "darwin":
        return "Global shortcuts are not available on macOS yet: open the quick chat from the menubar icon."
    if sys.platform.startswith("win"):
        return "Global shortcuts are not available on Windows yet: open the quick chat from the tray icon."
    if platform_name in ("offscreen", "minimal", "vnc"):
        return f"No desktop to take a global shortcut from (Qt platform {platform_name!r})."
    if platform_name == "wayland" or env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        # Under XWayland a grab "works" but only sees keys typed into other X11 windows: refuse it too.
        return ("Wayland does not let programs set global shortcuts: open the quick chat from the tray "
                "icon, or add a shortcut in your desktop's keyboard settings.")
    if not env.get("DISPLAY"):
        return "No X11 display (DISPLAY is not set), so no global shortcut."
    return None


def parse_shortcut(text: str) -> tuple[int, str]:
    """(X modifier mask, X keysym name) of a shortcut such as "Ctrl+Alt+Space"; ShortcutError when
    it is not one key with at least one of Ctrl, Alt or Meta (a plain key would eat typing)."""
    from Xlib import X

    sequence = QKeySequence(text)
    if sequence.isEmpty() or sequence.count() != 1:
        raise ShortcutError(f"“{text}” is not one key combination.")
    combination = sequence[0]
    modifiers, key = combination.keyboardModifiers(), combination.key()
    masks = {Qt.KeyboardModifier.ControlModifier: X.ControlMask, Qt.KeyboardModifier.AltModifier: X.Mod1Mask,
             Qt.KeyboardModifier.ShiftModifier: X.ShiftMask, Qt.KeyboardModifier.MetaModifier: X.Mod4Mask}
    mask = 0
    for modifier, bit in masks.items():
        if modifiers & modifier:
            mask |= bit
    if not mask & (X.ControlMask | X.Mod1Mask | X.Mod4Mask):
        raise ShortcutError(f"“{text}” needs Ctrl, Alt or Meta, or it would take keys you type.")
    name = QKeySequence(key).toString()
    keysym = {"Space": "space", "Return": "Return", "Esc": "Escape", "Tab": "Tab", "Backspace": "BackSpace",
              "Ins": "Insert", "Del": "Delete", "PgUp": "Prior", "PgDown": "Next"}.get(name, name)
    return mask, keysym.lower() if len(keysym) == 1 else keysym


class _X11Grab:
    """The key grab on an X connection of its own, watched by one daemon thread."""

    def __init__(self, mask: int, keysym: str, on_press) -> None:
        from Xlib import XK, X, display, error

        try:
            self.display = display.Display()
        except Exception as e:  # no server, no permission: say so, never crash
            raise ShortcutError(f"Could not reach the X display for a global shortcut ({e}).") from None
        code = self.display.keysym_to_keycode(XK.string_to_keysym(keysym))
        if not code:
            self.display.close()
            raise ShortcutError(f"This keyboard has no “{keysym}” key.")
        self.root = self.display.screen().root
        self.code = code
        # NumLock (Mod2) and CapsLock change the modifier state: grab with each of them too.
        self.masks = [mask | extra for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask)]
        caught = error.CatchError(error.BadAccess)
        for m in self.masks:
            self.root.grab_key(code, m, True, X.GrabModeAsync, X.GrabModeAsync, onerror=caught)
        self.display.sync()
        if caught.get_error():
            self._release()
            raise ShortcutError("Another program already uses this shortcut: choose another in Settings.")
        self.on_press = on_press
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="confab-global-shortcut", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        from Xlib import X

        fd = self.display.fileno()
        while not self.stopping.is_set():
            ready, _, _ = select.select([fd], [], [], POLL_S)
            while ready and not self.stopping.is_set() and self.display.pending_events():
                if self.display.next_event().type == X.KeyPress:
                    self.on_press()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=2)
        self._release()

    def _release(self) -> None:
        try:
            for m in self.masks:
                self.root.ungrab_key(self.code, m)
            self.display.sync()
        finally:
            self.display.close()


class GlobalShortcut(QObject):
    """Owns at most one global shortcut; `activated` is emitted on the GUI thread."""

    activated = Signal()
    _pressed = Signal()  # emitted on the grab thread, delivered queued on the GUI thread

    def __init__(self, parent: Optional[QObject] = None) -> None:
        super().__init__(parent)
        self._grab: Optional[_X11Grab] = None
        self.shortcut = ""
        self.status = "No global shortcut is set."
        self._pressed.connect(self.activated, Qt.ConnectionType.QueuedConnection)

    @property
    def active(self) -> bool:
        return self._grab is not None

    def set_shortcut(self, text: str) -> bool:
        """Use `text` ("" for none) from now on; False when it could not be set (see `status`)."""
        self.stop()
        self.shortcut = text.strip()
        if not self.shortcut:
            self.status = "No global shortcut is set."
            return True
        shown = QKeySequence(self.shortcut).toString(QKeySequence.SequenceFormat.NativeText) or self.shortcut
        reason = unavailable_reason(QGuiApplication.platformName())
        try:
            if reason is not None:
                raise ShortcutError(reason)
            mask, keysym = parse_shortcut(self.shortcut)
            self._grab = _X11Grab(mask, keysym, self._pressed.emit)
        except ImportError:
            self.status = "Global shortcuts need the python-xlib package, which is not installed."
            return False
        except ShortcutError as e:
            self.status = str(e)
            return False
        self.status = f"{shown} opens the quick chat from any program."
        return True

    def stop(self) -> None:
        """Release the keys (at quit, or before another shortcut)."""
        grab, self._grab = self._grab, None
        if grab is not None:
            grab.stop()
