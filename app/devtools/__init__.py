"""Devtools: `python -m app --self-test`, the UI benchmarks (`python -m app.devtools.bench_ui`,
`python -m app.devtools.bench_attachments`) and the README screenshots (`python -m
app.devtools.screenshots`, with `screenshots_versions`, `_attachments`, `_reasoning`).

Each drives the real app on the GUI thread with an event loop of its own; not used by the app itself.
"""
