"""Models: which engine the app runs - find and estimate models, Get models (Hugging Face),
load one, connect to a server, and serve the loaded engine on the local API.

Dialogs run on the GUI thread; loading, downloads and server checks run on threads of their own and
report back through `app.bridge.GuiRoute`.
"""
