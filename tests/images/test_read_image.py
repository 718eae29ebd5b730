"""read_file of an image: attached where the model takes images, described as binary where it does
not; decided by the bytes, never the name; too large or damaged, a clear error."""

from __future__ import annotations

from pathlib import Path

from ctxagent.context.images import MAX_IMAGE_BYTES
from ctxagent.tools import make_registry
from ctxagent.tools.contract import ToolContext, ToolResult, ToolServices
from image_helpers import jpeg, png


def _read(root: Path, path: str, *, images: bool) -> ToolResult:
    return make_registry().run("read_file", {"path": path}, ToolContext(root=root, services=ToolServices(images=images)))


def test_attached_where_the_model_takes_images(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(30, 20))
    (tmp_path / "photo.txt").write_bytes(jpeg(640, 480))  # a JPEG by its bytes, whatever its name says
    r = _read(tmp_path, "shot.png", images=True)
    assert not r.is_error and r.content == "[image shot.png: PNG 30×20, 88 bytes — attached below]"
    (image,) = r.images
    assert image.data == png(30, 20) and image.media_type == "image/png" and r.meta["files"] == ["shot.png"]
    assert _read(tmp_path, "photo.txt", images=True).images[0].media_type == "image/jpeg"


def test_a_model_without_images_gets_a_clear_text(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(30, 20))
    r = _read(tmp_path, "shot.png", images=False)
    assert r.is_error and r.images == []
    assert "is a binary file (PNG image, 88 bytes); its contents are not shown (this model takes no images)" in r.content


def test_too_large_or_damaged_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png(2, 2) + b"\0" * MAX_IMAGE_BYTES)
    (tmp_path / "cut.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (tmp_path / "wide.png").write_bytes(png(8001, 1))
    big = _read(tmp_path, "big.png", images=True)
    assert big.is_error and "too large to attach" in big.content and "5 MB" in big.content
    assert "damaged PNG" in _read(tmp_path, "cut.png", images=True).content
    assert "8001×1 pixels, over the 8000" in _read(tmp_path, "wide.png", images=True).content
