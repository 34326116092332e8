"""What an image's bytes are, and whether they may be decoded at all: the format from its first bytes
and its size in pixels from its header, before any pixel is decoded.

Why by hand: llama.cpp decodes with stb_image, which says only "failed" and would first allocate a
decompression bomb's pixels; Pillow is not shipped in the app. The headers of the formats stb reads
are a few fixed fields.
"""

from __future__ import annotations

import struct
import zlib
from typing import Optional

from .errors import ImageFormatError, ImageTooLargeError, ImageUnreadableError

MAX_IMAGE_BYTES = 20 * 2**20
"""Most bytes one image may have (what OpenAI's API takes per image)."""
MAX_IMAGE_PIXELS = 40_000_000
"""Most pixels one image may have (a 40-megapixel photo): its decoded RGB then stays under 120 MB."""
READABLE = {"png": "PNG", "jpeg": "JPEG", "gif": "GIF", "bmp": "BMP"}
"""Formats llama.cpp's decoder (stb_image) reads, by the names shown to a user."""
_OTHERS = (
    (b"RIFF", 8, b"WEBP", "WebP"), (b"", 4, b"ftypheic", "HEIC"), (b"", 4, b"ftypheix", "HEIC"),
    (b"", 4, b"ftypmif1", "HEIF"), (b"", 4, b"ftypavif", "AVIF"), (b"II*\x00", 0, b"", "TIFF"),
    (b"MM\x00*", 0, b"", "TIFF"), (b"%PDF", 0, b"", "PDF"), (b"<svg", 0, b"", "SVG"), (b"<?xml", 0, b"", "SVG"),
)
"""Formats people send that llama.cpp cannot read: (magic at 0, offset, magic there, name)."""
WHICH = "PNG, JPEG, GIF or BMP"


def kind(data: bytes) -> Optional[str]:
    """"png", "jpeg", "gif" or "bmp" from the first bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if data.startswith(b"BM") and len(data) >= 26:
        return "bmp"
    return None


def check(data: bytes, name: str = "the image") -> str:
    """The image's kind, or the typed error a user reads: too many bytes, a format llama.cpp cannot
    read, a header that is not there, or more pixels than MAX_IMAGE_PIXELS."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ImageUnreadableError(f"{name} must be given as bytes, not {type(data).__name__}")
    data = bytes(data)
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageTooLargeError(f"{name} is {len(data) / 2**20:.1f} MB; images of up to "
                                 f"{MAX_IMAGE_BYTES // 2**20} MB are read")
    found = kind(data)
    if found is None:
        other = next((n for head, at, magic, n in _OTHERS
                      if data.startswith(head) and data[at:at + len(magic)] == magic), None)
        if other:
            raise ImageFormatError(f"{name} is a {other} file; the model reads {WHICH} images: convert it first")
        raise ImageFormatError(f"{name} is not an image the model can read ({WHICH})")
    size = _size(found, data)
    if size is None:
        raise ImageUnreadableError(f"{name} could not be read: its {READABLE[found]} header is damaged or cut short")
    width, height = size
    if width <= 0 or height <= 0:
        raise ImageUnreadableError(f"{name} could not be read: its {READABLE[found]} header says {width}×{height} pixels")
    if width * height > MAX_IMAGE_PIXELS:
        raise ImageTooLargeError(f"{name} is {width}×{height} pixels ({width * height / 1e6:.0f} megapixels); "
                                 f"images of up to {MAX_IMAGE_PIXELS / 1e6:.0f} megapixels are read: scale it down")
    if found == "png" and not _png_intact(data):
        # stb_image checks no PNG checksum: a damaged file would decode to wrong pixels without a word
        raise ImageUnreadableError(f"{name} could not be read: the PNG file is damaged or cut short")
    if found == "jpeg" and b"\xff\xd9" not in data[-1024:]:
        # stb_image decodes a JPEG cut short without complaint (grey below the cut): refuse it here
        raise ImageUnreadableError(f"{name} could not be read: the JPEG file is cut short (its end marker is missing)")
    return found


def _size(found: str, data: bytes) -> Optional[tuple[int, int]]:
    """(width, height) from the header; None where the header is not all there."""
    try:
        if found == "png":
            if data[12:16] != b"IHDR":
                return None
            return struct.unpack(">II", data[16:24])
        if found == "gif":
            return struct.unpack("<HH", data[6:10])
        if found == "bmp":
            width, height = struct.unpack("<ii", data[18:26])
            return width, abs(height)
        return _jpeg_size(data)
    except struct.error:
        return None


def _jpeg_size(data: bytes) -> Optional[tuple[int, int]]:
    """The frame header's size (SOF0-SOF15 but DHT, JPG and DAC), walking the markers before it."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        length = struct.unpack(">H", data[at + 2:at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None


def _png_intact(data: bytes) -> bool:
    """Every chunk's CRC matches and the file reaches its IEND chunk."""
    at = 8
    while at + 12 <= len(data):
        length = struct.unpack(">I", data[at:at + 4])[0]
        end = at + 8 + length
        if end + 4 > len(data) or zlib.crc32(data[at + 4:end]) != struct.unpack(">I", data[end:end + 4])[0]:
            return False
        if data[at + 4:at + 8] == b"IEND":
            return True
        at = end + 4
    return False
