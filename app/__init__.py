"""Confab's desktop app: the GUI, the bridge to the engine, and the conversation store.

`app/` never imports torch or mlx, and sees the engine only through `engine/__init__.py`.

Rooms, lowest first (each package's docstring says which thread it runs on):
`store/` (SQLite), `conversations/` (conversations ⇄ live engine sessions), `bridge/` (the store
thread and the one route back to the GUI thread), `settings/`, `chat/` (one conversation's side of
the window), `window/` (the window around it), `models/` (which engine runs), `quick/` (tray and
quick chat), `devtools/` (self-test, UI bench, screenshots); `application.py` wires them together.
A reply's text crosses three rooms: engine → `bridge` → `chat` (panel → view → message).
"""
