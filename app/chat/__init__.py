"""Chat: one conversation's side of the window - panel, messages as Markdown, composer, header,
reading progress and context meter.

A reply's text arrives from `app.bridge` as Qt signals and goes panel -> view -> message view here,
all in this room. Widgets: GUI thread only.
"""
