"""macOS only: run as a menubar-only app (no Dock icon, no app menu) when the user chooses it.

Qt has no API for the activation policy, and pulling in PyObjC for one call is a large dependency,
so this sends the one Objective-C message through the runtime with ctypes:
`[[NSApplication sharedApplication] setActivationPolicy:...]`. The packaged app can also start that
way from the start with `LSUIElement` in its Info.plist. Elsewhere every function here is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

REGULAR = 0
"""NSApplicationActivationPolicyRegular: a Dock icon and a menu bar, like any app."""
ACCESSORY = 1
"""NSApplicationActivationPolicyAccessory: no Dock icon; windows and the status item still work."""


def set_menubar_only(enabled: bool) -> bool:
    """Hide (or show again) the Dock icon. True when the policy was set; False off macOS or when
    the Objective-C runtime cannot be reached (the app then keeps its Dock icon)."""
    if sys.platform != "darwin":
        return False
    try:
        objc = ctypes.cdll.LoadLibrary(ctypes.util.find_library("objc"))
    except OSError:
        return False
    objc.objc_getClass.restype = ctypes.c_void_p
    objc.objc_getClass.argtypes = [ctypes.c_char_p]
    objc.sel_registerName.restype = ctypes.c_void_p
    objc.sel_registerName.argtypes = [ctypes.c_char_p]
    send = objc.objc_msgSend
    send.restype = ctypes.c_void_p
    send.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    app = send(objc.objc_getClass(b"NSApplication"), objc.sel_registerName(b"sharedApplication"))
    if not app:
        return False
    set_policy = ctypes.cast(objc.objc_msgSend,
                             ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long))
    return bool(set_policy(app, objc.sel_registerName(b"setActivationPolicy:"), ACCESSORY if enabled else REGULAR))
