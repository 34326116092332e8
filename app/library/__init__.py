"""A conversation's library: documents too large for the model's context, indexed beside it.

- `reading`: which files a library takes and their text (the attachment reader's, all of it).
- `indexing`: a document cut into passages and embedded (no widgets, no store).
- `embedder`: the app's one embedding model, made on first use, its memory reported.
- `indexer`: the indexing thread: a queue of files, progress, cancel; the store writes on its thread.
- `room`, `controls`, `dialog`: the Library button and line in the chat window, and its dialog.

Retrieval for a turn is `app.conversations.sources` (the store's thread, beside the reply).
"""
