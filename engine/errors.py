"""Named engine errors: every failure a caller can handle has its own class.

All derive from EngineError, so a caller that only wants "did the engine refuse?" catches one type.
"""


class EngineError(Exception):
    """Base of every error the engine raises on purpose."""


class ModelLoadError(EngineError):
    """The model source could not be resolved, converted or loaded."""


class DraftModelError(ModelLoadError):
    """The draft model (EngineConfig.draft_model) cannot draft for this model: the model itself would
    load without it (the app then does, and says why)."""


class DraftModelFileError(DraftModelError):
    """The draft model's file itself cannot be used (missing, not a GGUF, unreadable): unlike a
    vocabulary that does not match this model, trying it again with any model fails the same way."""


class CapacityError(EngineError):
    """Opening another session would exceed the engine's session capacity."""


class SessionClosedError(EngineError):
    """The session was closed; open a new one."""


class SessionBusyError(EngineError):
    """The session is already generating; wait for it or cancel it first."""


class SessionPoisonedError(EngineError):
    """A forward pass failed on this session; call reset() before using it again."""


class ContextOverflowError(EngineError):
    """The prompt does not fit in the engine's max_context."""


class InvalidRequestError(EngineError):
    """Bad arguments: sampling values out of range, empty prompt, unknown option."""


class ImageError(InvalidRequestError):
    """An image in a message cannot be used; the message says why and what to do. Raised before
    anything is queued: the session is left as it was."""


class ImageUnreadableError(ImageError):
    """The image's bytes are damaged or cut short."""


class ImageFormatError(ImageError):
    """The bytes are no image, or one of a format the model cannot read (WebP, HEIC, TIFF...)."""


class ImageTooLargeError(ImageError):
    """Too many bytes or pixels."""


class ImagesNotSupportedError(ImageError):
    """The loaded model reads text only (no vision projector, or a backend without images)."""


class ReplyInterruptedError(EngineError):
    """A reply was cut off by something outside the engine (a remote connection dropped); the text
    that arrived is kept and the reply is stored `interrupted`."""


class StateFileError(EngineError):
    """A saved session state is unreadable or belongs to another model."""


class DownloadError(EngineError):
    """A model download from Hugging Face failed; each cause below has its own class."""


class DiskFullError(DownloadError):
    """Not enough free disk space for the download (checked before and while writing)."""


class NetworkError(DownloadError):
    """The connection failed or was cut; the partial file is kept and the next try resumes it."""


class AccessDeniedError(DownloadError):
    """401/403: the repo is gated or private; accept its terms on the Hub and set a token."""


class RepoNotFoundError(DownloadError):
    """No such repo (or file) on the Hub."""


class NoWeightsError(DownloadError):
    """The repo has nothing this machine can load (no GGUF, no safetensors folder)."""


class ChecksumError(DownloadError):
    """A downloaded file does not match the Hub's checksum; it was deleted, not kept."""


class DownloadStopped(DownloadError):
    """The download was paused (partial file kept, resumable) or cancelled (partial file removed)."""

    def __init__(self, message: str, cancelled: bool) -> None:
        super().__init__(message)
        self.cancelled = cancelled
