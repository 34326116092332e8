"""Named store errors. All derive from StoreError; each message is meant to be shown to a user."""


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class StoreReadOnlyError(StoreError):
    """The data folder or the database file cannot be written; nothing was changed."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer Confab (it has migrations this one does not know)."""


class NotFoundError(StoreError, LookupError):
    """No conversation, message or saved state with that id."""


class InvalidValueError(StoreError, ValueError):
    """A value out of range: unknown role or status, sampling settings that are not a JSON object."""


class ReplyClosedError(StoreError):
    """The reply being streamed was already finished, or its row is gone (conversation deleted)."""


class ImportFormatError(StoreError, ValueError):
    """A file given to import is not a Confab conversation export this version can read."""
