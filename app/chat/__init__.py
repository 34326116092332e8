"""Chat: one conversation's side of the window - panel, messages as Markdown, composer, header,
reading progress, context meter, the thinking block and the inline message editor, and attached
files and images (read and counted for the composer, shown as chips in the sent message; an image
with its thumbnail, and large in `image_viewer`).

A reply's text arrives from `app.bridge` as Qt signals and goes panel -> view -> message view here,
all in this room. Widgets: GUI thread only; `attachment_reader` and `attachment_count` (no Qt),
`image_reader` (QImage only, never QPixmap) and `image_support`'s count run on the attachment
tray's two reading threads, which report back through `app.bridge.GuiRoute`.
"""
