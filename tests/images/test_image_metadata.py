"""An image's metadata never reaches the attachment store or the provider (issue 30): real PNG, JPEG,
WEBP and GIF files written by Pillow with a key in every text-carrying place their formats have;
what is kept decodes to the same pixels, byte for byte, and a photo keeps its orientation.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from ctxagent.context.image_metadata import strip_metadata
from ctxagent.context.images import load_image
from image_helpers import e2e, png

PIL = pytest.importorskip("PIL")
from PIL import Image, PngImagePlugin  # noqa: E402

KEY = "sk-ant-api03-Zq9xY8wV7uT6sR5qP4oN3mL2kJ1iH0gF9eD8cB7a"
SECRETS = [KEY.encode(), b"hunter2-db-password", b"52.3676 N"]  # a key, a password, a place
git, run_ctxagent = e2e().git, e2e().run_ctxagent


def _picture(size: tuple[int, int] = (48, 32)) -> Image.Image:
    img = Image.new("RGB", size)
    img.putdata([((x * 37) % 256, (y * 91) % 256, (x * y) % 256) for y in range(size[1]) for x in range(size[0])])
    return img


def _exif(orientation: int | None = None) -> Image.Exif:
    exif = Image.Exif()
    exif[0x010E] = f"api key {KEY}"  # ImageDescription
    exif[0x013B] = "hunter2-db-password"  # Artist
    exif[0x9286] = b"ASCII\x00\x00\x00" + KEY.encode()  # UserComment (in the EXIF sub-IFD)
    exif[0x8298] = "52.3676 N, 4.9041 E"  # Copyright: where it was taken
    if orientation is not None:
        exif[0x0112] = orientation
    return exif


def _png_with_keys() -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", f"OPENAI_API_KEY={KEY}")  # tEXt
    info.add_text("Author", "hunter2-db-password", zip=True)  # zTXt
    info.add_itxt("Description", f"密钥 {KEY}", lang="zh", tkey="描述")  # iTXt
    info.add_text("Location", "52.3676 N")
    out = io.BytesIO()
    _picture().save(out, "PNG", pnginfo=info, exif=_exif())  # eXIf too
    return out.getvalue()


def _jpeg_with_keys(orientation: int | None = None) -> bytes:
    out = io.BytesIO()
    _picture().save(out, "JPEG", quality=90, exif=_exif(orientation), comment=f"key {KEY}".encode(),
                    xmp=f"<x:xmpmeta><dc:creator>hunter2-db-password {KEY}</dc:creator></x:xmpmeta>".encode())
    return out.getvalue()


def _webp_with_keys() -> bytes:
    out = io.BytesIO()
    _picture().save(out, "WEBP", lossless=True, exif=_exif(), xmp=f"<x>{KEY} hunter2-db-password</x>".encode())
    return out.getvalue()


def _gif_with_keys() -> bytes:
    out = io.BytesIO()
    _picture().convert("P").save(out, "GIF", comment=f"{KEY} hunter2-db-password 52.3676 N".encode())
    return out.getvalue()


FILES = {"image/png": _png_with_keys, "image/jpeg": _jpeg_with_keys, "image/webp": _webp_with_keys,
         "image/gif": _gif_with_keys}


def _pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as img:
        return img.tobytes()


@pytest.mark.parametrize("media_type", FILES)
def test_every_key_in_the_metadata_is_gone_and_the_pixels_are_the_same(media_type: str) -> None:
    data = FILES[media_type]()
    assert all(s in data for s in SECRETS[:2]), "the file as written holds the keys"
    image = load_image(data, "shot")
    assert image.media_type == media_type and (image.width, image.height) == (48, 32)
    for secret in SECRETS:
        assert secret not in image.data, secret
    assert _pixels(image.data) == _pixels(data)  # decoded pixels, byte for byte
    assert strip_metadata(image.data, media_type) == image.data  # nothing left to strip


def test_the_compressed_pixel_data_is_copied_untouched() -> None:
    """Not only the decoded pixels: the PNG's IDAT and the JPEG's scans are the same bytes."""
    data = _png_with_keys()
    with Image.open(io.BytesIO(data)) as img:
        assert img.text  # Pillow reads the text chunks of the original
    stripped = load_image(data).data
    idat = [c for c in _png_chunks(data) if c[0] == b"IDAT"]
    assert idat and idat == [c for c in _png_chunks(stripped) if c[0] == b"IDAT"]
    assert [c[0] for c in _png_chunks(stripped)] == [b"IHDR", b"IDAT", b"IEND"]
    jpeg = _jpeg_with_keys()
    scan = jpeg[jpeg.index(b"\xff\xda"):]
    assert load_image(jpeg).data.endswith(scan)


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out, i = [], 8
    while i < len(data):
        length = int.from_bytes(data[i:i + 4], "big")
        out.append((data[i + 4:i + 8], data[i + 8:i + 8 + length]))
        i += 12 + length
    return out


def test_a_photo_keeps_its_orientation_and_nothing_else_of_its_exif() -> None:
    stripped = load_image(_jpeg_with_keys(orientation=6)).data
    with Image.open(io.BytesIO(stripped)) as img:
        exif = img.getexif()
        assert dict(exif) == {0x0112: 6}
    assert KEY.encode() not in stripped and b"hunter2" not in stripped
    upright = load_image(_jpeg_with_keys(orientation=1)).data
    with Image.open(io.BytesIO(upright)) as img:
        assert not img.getexif()


def test_a_damaged_file_is_passed_on_as_it_was() -> None:
    """Bytes the walk cannot follow (cut in the middle) are not rewritten: load_image decides as before."""
    cut = _png_with_keys()[:-20]
    assert strip_metadata(cut, "image/png") == cut
    assert strip_metadata(b"\xff\xd8\xff\xe0\x00", "image/jpeg") == b"\xff\xd8\xff\xe0\x00"
    plain = png(4, 3)
    assert strip_metadata(plain, "image/png") == plain


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini"])
def test_no_key_of_an_image_reaches_the_spill_folder_or_the_provider(repo: Path, scripted_server, model: str) -> None:
    """Through the real CLI and SDKs: `@photo.jpg` and read_file of a PNG, both carrying keys in their
    metadata. The request's image blocks, every file under .ctxagent/ and the log hold no key."""
    import base64

    (repo / "shot.png").write_bytes(_png_with_keys())
    (repo / "photo.jpg").write_bytes(_jpeg_with_keys(orientation=6))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "images")
    srv = scripted_server([{"tool_calls": [{"name": "read_file", "arguments": {"path": "shot.png"}}]},
                           {"text": "I see: {images}"}])
    out = run_ctxagent(repo, "-p", "what is in @photo.jpg ?", "--model", model, "--base-url", srv.url,
                       "--output", "json", "--yes")
    assert out.returncode == 0, out.stderr
    assert "image/jpeg 48x32" in json.loads(out.stdout.strip().splitlines()[-1])["result"]
    sent = json.dumps([r["body"] for r in srv.requests()])
    blobs = [base64.b64decode(b) for b in _base64_blocks(sent)]
    assert len(blobs) >= 2 and {b[:2] for b in blobs} >= {b"\x89P", b"\xff\xd8"}
    for secret in SECRETS:
        assert all(secret not in b for b in blobs)
        assert secret.decode() not in sent
    stored = list((repo / ".ctxagent" / "spill").glob("*.img"))
    assert len(stored) == 2
    for path in (repo / ".ctxagent").rglob("*"):
        if path.is_file():
            assert not any(s in path.read_bytes() for s in SECRETS), path


def _base64_blocks(text: str) -> list[str]:
    import re

    found = re.findall(r'"data": "([A-Za-z0-9+/=]{40,})"', text)
    found += re.findall(r'data:image/[a-z]+;base64,([A-Za-z0-9+/=]{40,})', text)
    return found
