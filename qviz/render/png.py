"""Cropping a PNG to its top-left corner, with the standard library alone.

Headless Chromium's ``--screenshot`` is the size of its window, but it draws
only the page's viewport into it, which is shorter than the window (by its
hidden browser frame: 143 px in Chromium 150) and never narrower than 500 px:
the rest of the picture is blank. :func:`qviz.render.image.svg_to_png` draws in
a window bigger than the picture asked for, the picture at the page's top-left
corner, and keeps that corner.

Cutting rows off the bottom and bytes off the right of each row needs no pixel
decoded: a PNG row's filter refers only to the row above and the pixels to the
left, which stay.

>>> import zlib
>>> def png(w, h, rows):   # an 8-bit grey PNG
...     chunk = lambda kind, data: (len(data).to_bytes(4, "big") + kind + data
...                                 + zlib.crc32(kind + data).to_bytes(4, "big"))
...     ihdr = w.to_bytes(4, "big") + h.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
...     raw = b"".join(b"\\0" + bytes(r) for r in rows)
...     return b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
>>> small = crop_png(png(3, 3, [[1, 2, 3], [4, 5, 6], [7, 8, 9]]), 2, 2)
>>> small == png(2, 2, [[1, 2], [4, 5]])
True
"""

from __future__ import annotations

import struct
import zlib

__all__ = ["crop_png", "png_size"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: bytes per pixel of 8-bit PNGs, by colour type (grey, RGB, palette, grey+alpha, RGBA)
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _chunks(data: bytes):
    if not data.startswith(_SIGNATURE):
        raise ValueError("not a PNG")
    at = len(_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        yield kind, data[at + 8:at + 8 + length]
        at += 12 + length


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) of a PNG."""
    kind, header = next(_chunks(data))
    return struct.unpack(">II", header[:8])


def crop_png(data: bytes, width: int, height: int) -> bytes:
    """The top-left ``width`` × ``height`` pixels of a PNG (8-bit, not interlaced: what
    Chromium writes); the PNG itself if it is that size already."""
    chunks = list(_chunks(data))
    header = chunks[0][1]
    full_w, full_h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if (full_w, full_h) == (width, height):
        return data
    if depth != 8 or interlace or colour not in _CHANNELS or width > full_w or height > full_h:
        raise ValueError(f"cannot crop this PNG ({full_w}×{full_h}, depth {depth}, colour type {colour}, "
                         f"interlace {interlace}) to {width}×{height}")
    row = 1 + full_w * _CHANNELS[colour]   # each row: a filter byte, then its pixels
    keep = 1 + width * _CHANNELS[colour]
    # only the rows kept are ever decompressed
    raw = zlib.decompressobj().decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"), row * height)
    if len(raw) < row * height:
        raise ValueError("the PNG's image data is cut short")
    packed = zlib.compress(b"".join(raw[r * row:r * row + keep] for r in range(height)))
    out = [_SIGNATURE, _chunk(b"IHDR", struct.pack(">II", width, height) + header[8:])]
    out += [_chunk(kind, body) for kind, body in chunks[1:] if kind not in (b"IHDR", b"IDAT", b"IEND")]
    out += [_chunk(b"IDAT", packed), _chunk(b"IEND", b"")]
    return b"".join(out)
