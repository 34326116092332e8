"""Settings: app settings (a JSON file, no Qt), the settings dialogs, per-conversation settings,
presets and the theme.

`app_settings` is plain data, read from any thread (the bridge reads it to build a reply's
sampling); everything else here is a widget on the GUI thread.
"""
