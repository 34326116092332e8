"""Window: the main window around the chat - conversation list and its painting, File menu,
status bar, Undo bar, the remembered layout and the quit question.

Widgets and the list model: GUI thread only. It reads conversations through `app.bridge`.
"""
