"""Reading an image to attach: from a file or the clipboard, scaled down when it is a large photo,
in a format the model's image decoder reads. Qt's image classes only (QImage is safe off the GUI
thread, QPixmap is not): this runs on the tray's reading threads.

    read = read_image(Path("photo.jpg"))            # or image_from_qimage(clipboard.image(), "Pasted image.png")
    attachment = read.attachment(tokens=80, exact=True)      # with a small thumbnail stored beside it
    small = thumbnail(read.data, 48)                # a QImage; the GUI makes it a QPixmap

Why the app scales: a phone photo is 12-50 megapixels, and every vision projector this engine runs
(llama.cpp's, M-RoPE ones excepted) reads at most about 1,500-2,000 pixels on the longest edge,
resizing bigger images itself. So a photo whose longest edge is over `MAX_EDGE` is scaled to it as
its preprocessor would scale it anyway: what the model sees is the same, the message stored with it
is a tenth of the size, and the chip shows both sizes ("4032×3024 → 2048×1536") beside the tokens
the model counts for the scaled image. Images in PNG, JPEG, GIF or BMP within that size are sent as
they are, byte for byte; other formats Qt reads (WebP, TIFF, …) are converted, and a JPEG whose
EXIF says it is rotated is turned upright (the model's decoder ignores EXIF).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, Qt
from PySide6.QtGui import QImage, QImageIOHandler, QImageReader

from app.chat.attachment_reader import UnreadableFileError
from app.store import Attachment

MAX_EDGE = 2048
"""Longest edge, in pixels, of an image as sent; a larger one is scaled down to it."""
MAX_FILE_BYTES = 200 << 20
"""Bytes of an image file read at most (a 100-megapixel TIFF is about this)."""
SENT_AS_IS = {"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp"}
"""Formats the model's decoder (llama.cpp's stb_image) reads, by Qt's format name."""
SUFFIXES = {".png", ".jpg", ".jpeg", ".jfif", ".gif", ".bmp", ".webp", ".tif", ".tiff", ".heic", ".heif", ".avif"}
_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"II*\x00", b"MM\x00*")  # not "BM": text may begin so
_PHOTO_FORMATS = {"jpeg", "jpg", "webp", "heic", "heif", "avif"}
"""Formats of photos: scaled or converted, they become JPEG (a PNG of a photo is several times larger)."""
JPEG_QUALITY = 90
THUMB_EDGE = 128
"""Longest edge of the thumbnail stored with an image (a chip shows it at up to 80 pixels high)."""


@dataclass(frozen=True)
class ImageRead:
    """An image ready to attach: the bytes sent, and its sizes."""

    name: str
    media_type: str
    data: bytes
    """What is sent to the model and stored with the message."""
    size: int
    """Bytes of the original (the file, or the pasted image as encoded)."""
    width: int
    height: int
    scaled_from: Optional[tuple[int, int]] = None
    """(width, height) before it was scaled down; None when sent at its own size."""
    thumbnail: Optional[bytes] = None
    """A small JPEG or PNG of it (`thumbnail_bytes`), stored with it for the history."""

    def attachment(self, tokens: Optional[int] = None, exact: bool = False) -> Attachment:
        return Attachment(self.name, self.media_type, self.size, "", tokens=tokens, tokens_exact=exact,
                          data=self.data, width=self.width, height=self.height, scaled_from=self.scaled_from,
                          thumbnail=self.thumbnail)


def is_image_file(path: Path) -> bool:
    """Whether `path` is an image (by its name, or its first bytes for a name without a known suffix)."""
    if path.suffix.lower() in SUFFIXES:
        return True
    try:
        with path.open("rb") as f:
            head = f.read(12)
    except OSError:
        return False
    return head.startswith(_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


def read_image(path: Path) -> ImageRead:
    """The image in `path`, ready to send; UnreadableFileError saying why not."""
    name = path.name
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise UnreadableFileError(f"{name} is {size / 2**20:,.0f} MB; images of up to "
                                      f"{MAX_FILE_BYTES >> 20} MB can be attached.")
        data = path.read_bytes()
    except FileNotFoundError:
        raise UnreadableFileError(f"{name} was not found (it may have been moved or deleted).") from None
    except OSError as e:
        raise UnreadableFileError(f"{name} could not be read ({e.strerror or e}).") from None
    return image_from_bytes(data, name)


def image_from_bytes(data: bytes, name: str) -> ImageRead:
    """An image file's bytes, ready to send: as they are when the model reads them at this size,
    otherwise decoded, turned upright, scaled down and encoded again."""
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    kind = bytes(reader.format().data()).decode("ascii", "replace").lower()
    if not reader.canRead():
        raise UnreadableFileError(f"{name} is not an image Confab can read; attach a PNG, JPEG, GIF, BMP, "
                                  "WebP or TIFF image.")
    raw = reader.size()
    turned = bool(reader.transformation() & QImageIOHandler.Transformation.TransformationRotate90)
    upright = reader.transformation() == QImageIOHandler.Transformation.TransformationNone
    if kind in SENT_AS_IS and upright and raw.isValid() and max(raw.width(), raw.height()) <= MAX_EDGE:
        return ImageRead(name, SENT_AS_IS[kind], data, len(data), raw.width(), raw.height())
    if raw.isValid() and max(raw.width(), raw.height()) > MAX_EDGE:
        reader.setScaledSize(_fit(raw))  # decoded at the smaller size: a 50 MP photo never fills memory
    image = reader.read()
    if image.isNull():
        raise UnreadableFileError(f"{name} could not be read as an image ({reader.errorString()}).")
    source = (raw.height(), raw.width()) if turned else (raw.width(), raw.height())
    return _encoded(image, name, len(data), kind in _PHOTO_FORMATS, source if raw.isValid() else None)


def image_from_qimage(image: QImage, name: str) -> ImageRead:
    """A pasted image (a screenshot, an image copied in a browser), ready to send: PNG, scaled down
    when it is larger than `MAX_EDGE`."""
    if image.isNull():
        raise UnreadableFileError("The clipboard's image could not be read.")
    return _encoded(image, name, 0, False, (image.width(), image.height()))


def _encoded(image: QImage, name: str, size: int, photo: bool, source: Optional[tuple[int, int]]) -> ImageRead:
    if max(image.width(), image.height()) > MAX_EDGE:
        image = image.scaled(_fit(image.size()), Qt.AspectRatioMode.IgnoreAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    as_jpeg = photo and not image.hasAlphaChannel()
    out = QBuffer()
    out.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(out, "JPEG" if as_jpeg else "PNG", JPEG_QUALITY if as_jpeg else -1):
        raise UnreadableFileError(f"{name} could not be prepared for the model (it could not be encoded).")
    data = bytes(out.data().data())
    width, height = image.width(), image.height()
    scaled = source if source is not None and source != (width, height) else None
    return ImageRead(_sent_name(name, as_jpeg), "image/jpeg" if as_jpeg else "image/png", data,
                     size or len(data), width, height, scaled)


def _sent_name(name: str, jpeg: bool) -> str:
    """`name`, or with the suffix of what is sent when it says otherwise ("scan.tiff" → "scan.png")."""
    path = Path(name)
    if path.suffix.lower() in ((".jpg", ".jpeg", ".jfif") if jpeg else (".png",)):
        return name
    return f"{path.stem or 'image'}{'.jpg' if jpeg else '.png'}"


def _fit(size: QSize) -> QSize:
    """`size` scaled down so its longest edge is `MAX_EDGE`."""
    w, h = size.width(), size.height()
    scale = MAX_EDGE / max(w, h)
    return QSize(max(1, round(w * scale)), max(1, round(h * scale)))


def thumbnail(data: bytes, edge: int) -> QImage:
    """The image in `data` at most `edge` pixels on its longest side (a null QImage if unreadable);
    JPEGs are decoded at the small size directly, so this is cheap enough for the GUI thread."""
    buffer = QBuffer()
    buffer.setData(QByteArray(data))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    size = reader.size()
    if size.isValid() and max(size.width(), size.height()) > edge:
        scale = edge / max(size.width(), size.height())
        reader.setScaledSize(QSize(max(1, round(size.width() * scale)), max(1, round(size.height() * scale))))
    return reader.read()


def thumbnail_bytes(small: QImage) -> Optional[bytes]:
    """`small` (a `thumbnail`) encoded to store: JPEG, or PNG where it is transparent; None if empty."""
    if small.isNull():
        return None
    out = QBuffer()
    out.open(QIODevice.OpenModeFlag.WriteOnly)
    transparent = small.hasAlphaChannel()
    small.save(out, "PNG" if transparent else "JPEG", -1 if transparent else 85)
    return bytes(out.data().data()) or None


def shown_thumbnail(attachment: Attachment, edge: int) -> QImage:
    """A sent image's thumbnail: the one stored with it, else made from its bytes (an imported one)."""
    if attachment.thumbnail:
        small = QImage.fromData(attachment.thumbnail)
        if not small.isNull():
            return small
    return thumbnail(attachment.data or b"", edge)


def pixels(attachment: Attachment) -> str:
    """"2048×1536", "4032×3024 → 2048×1536" when Confab scaled it, "" when unknown."""
    if attachment.width is None or attachment.height is None:
        return ""
    sent = f"{attachment.width}×{attachment.height}"
    if attachment.scaled_from is None:
        return sent
    return f"{attachment.scaled_from[0]}×{attachment.scaled_from[1]} → {sent}"
