"""Quick: the menubar side of the app - tray icon, quick chat window, global shortcut, one running
instance per data folder, macOS menubar-only mode.

GUI thread, except the global shortcut's X11 listener (a daemon thread that only posts to the GUI
thread) and the single-instance local socket (Qt's, on the GUI thread's event loop).
"""
