"""Devtools: `python -m app --self-test`, the UI benchmark (`python -m app.devtools.bench_ui`) and
the README screenshots (`python -m app.devtools.screenshots`).

Each drives the real app on the GUI thread with an event loop of its own; not used by the app itself.
"""
