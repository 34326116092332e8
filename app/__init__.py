"""Confab's desktop app: the GUI, the bridge to the engine, and the conversation store.

`app/` never imports torch or mlx, and sees the engine only through `engine/__init__.py`.
"""
