"""Image files read safely: a PNG, JPEG, GIF, BMP, ... (anything Pillow reads) as an array (C, H, W) of values in
[0, 1], for the image models' attention pages (`redthread attention --image FILE`) and the web app's uploads.

A small file can hold a huge image (a decompression bomb), so an image's size is read from its header and one over
MAX_IMAGE_PIXELS is refused (`ImageTooLarge`) before any pixel is decoded; given `fit`, a larger image is resized
as it is decoded, so memory stays bounded. Every failure is a one-line `RedthreadError`. `prepare_image`
(`redthread.data.images`) then turns the array into what a model takes.
"""

from __future__ import annotations

import io
from pathlib import Path

from redthread.errors import InvalidValue, MissingFile, RedthreadError

MAX_IMAGE_PIXELS = 16_000_000  # the largest image read (width x height): 16 megapixels, 64 MB decoded as RGBA


class ImageTooLarge(InvalidValue):
    """An image over MAX_IMAGE_PIXELS: refused from its header, before any pixel is decoded."""


def read_image_file(path: str | Path, fit: int | None = None):
    """A PNG (or any format Pillow reads) as an array (C, H, W) with values in [0, 1] (see `_read_image`)."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"image file not found: {path}")
    return _read_image(path, str(path), fit)


def read_image_bytes(data: bytes, name: str = "the image", fit: int | None = None):
    """The bytes of an image file (PNG, JPEG, ...) as an array (C, H, W) with values in [0, 1] (see `_read_image`)."""
    return _read_image(io.BytesIO(data), name, fit)


def _read_image(source, name: str, fit: int | None = None):
    """Pillow reads the file (PNG, JPEG, GIF, BMP, ...); 8-bit modes become L, RGB or RGBA, 16-bit grey is scaled
    by 65535, 32-bit grey by its brightest pixel.

    A small file can hold a huge image (a decompression bomb: 20000 x 20000 black pixels compress to 400 KB), so the
    size is read from the header first and an image over MAX_IMAGE_PIXELS is refused before it is decoded. Given
    `fit`, an image larger than fit x fit is resized to fit x fit as it is decoded (a JPEG is decoded at reduced
    scale), so its full-size pixels never become floats. Any failure is a one-line RedthreadError.
    """
    import warnings

    import numpy as np
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)  # Pillow's own bomb check, as an error
            with Image.open(source) as img:
                width, height = img.size  # from the header: nothing is decoded yet
                if width * height > MAX_IMAGE_PIXELS:
                    raise ImageTooLarge(f"{name} is {width}x{height} pixels: {_over_the_limit(width * height)}")
                decoded, scale = _decode(img, fit)
                pixels = np.asarray(decoded, dtype=np.float32)
    except RedthreadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:  # Pillow's check, as the file opens
        raise ImageTooLarge(f"{name} is too large to read: {_over_the_limit(_bomb_pixels(str(e)))}") from None
    except Image.UnidentifiedImageError:
        raise InvalidValue(f"cannot read {name} as an image: not a format Pillow reads (PNG, JPEG, GIF, BMP, ...)") from None
    except Exception as e:  # noqa: BLE001 - a corrupt file can fail anywhere in Pillow's decoders; it is the file's fault
        raise InvalidValue(f"cannot read {name} as an image: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    pixels /= scale if scale is not None else max(float(pixels.max()), 1.0)
    return pixels[None] if pixels.ndim == 2 else np.moveaxis(pixels, -1, 0)  # (H, W, C) -> (C, H, W)


def _over_the_limit(pixels: int | None) -> str:
    limit = f"the limit of {MAX_IMAGE_PIXELS / 1e6:.0f} megapixels"
    return f"over {limit}" if pixels is None else f"{pixels / 1e6:.1f} megapixels, over {limit}"


def _bomb_pixels(message: str) -> int | None:
    """The pixel count in Pillow's decompression-bomb message ("Image size (400000000 pixels) exceeds ...")."""
    import re

    found = re.search(r"\((\d+) pixels\)", message)
    return int(found.group(1)) if found else None


def _decode(img, fit: int | None):
    """The image decoded in mode L, RGB, RGBA (full scale 255) or F (16-bit: 65535; 32-bit: None, its brightest
    pixel), resized to fit x fit if it is larger."""
    from PIL import Image

    shrink = fit is not None and max(img.size) > fit
    if shrink:
        img.draft(img.mode, (fit, fit))  # JPEG: decode at 1/2, 1/4 or 1/8 scale, still at least fit x fit
    if img.mode.startswith("I;16"):
        mode, scale = "F", 65535.0
    elif img.mode in ("I", "F"):
        mode, scale = "F", None
    else:
        alpha = "A" in img.getbands() or "transparency" in img.info
        mode, scale = ("RGBA" if alpha else "L" if img.mode in ("1", "L") else "RGB"), 255.0
    decoded = img if img.mode == mode else img.convert(mode)
    if shrink:
        decoded = decoded.resize((fit, fit), Image.BILINEAR, reducing_gap=2.0)
    return decoded, scale
