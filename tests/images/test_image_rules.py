"""context/images.py: what an image is (by its bytes), its limits, and its token rules."""

from __future__ import annotations

import pytest
from ctxagent.context.images import (
    MAX_IMAGE_BYTES,
    ImageError,
    ImageReader,
    anthropic_tokens,
    image_tokens,
    load_image,
    openai_tokens,
    rule_of,
    sniff,
    store_image,
)
from ctxagent.context.spill import SpillStore
from image_helpers import gif, jpeg, png, webp


def test_magic_bytes_decide_not_the_name() -> None:
    assert sniff(png()) == "image/png"
    assert sniff(jpeg()) == "image/jpeg"
    assert sniff(gif()) == "image/gif"
    assert sniff(webp()) == "image/webp"
    assert sniff(b"%PDF-1.7 ...") is None
    assert sniff(b"RIFF\x00\x00\x00\x00WAVEfmt ") is None  # RIFF, but a sound
    with pytest.raises(ImageError, match="not a PNG, JPEG, GIF or WEBP"):
        load_image(b"just text named shot.png", "shot.png")


@pytest.mark.parametrize(("data", "size"), [(png(4, 3), (4, 3)), (jpeg(640, 480), (640, 480)), (gif(10, 20), (10, 20)),
                                            (webp(300, 200), (300, 200))])
def test_dimensions_from_the_header(data: bytes, size: tuple[int, int]) -> None:
    image = load_image(data, "x")
    assert (image.width, image.height) == size


def test_limits_refuse_with_a_clear_error() -> None:
    big = png(2, 2) + b"\x00" * MAX_IMAGE_BYTES
    with pytest.raises(ImageError, match="too large to attach"):
        load_image(big, "huge.png")
    with pytest.raises(ImageError, match="over the 8000 a side"):
        load_image(png(9000, 1), "wide.png")
    with pytest.raises(ImageError, match="damaged PNG"):
        load_image(b"\x89PNG\r\n\x1a\n\x00\x00", "cut.png")


def test_anthropic_rule_w_h_over_750_resized_and_capped() -> None:
    assert anthropic_tokens(200, 200) == 54  # 40,000 / 750 = 53.3
    assert anthropic_tokens(1000, 1000) == 1334
    assert anthropic_tokens(1092, 1092) == 1590  # the docs' table: ≈1,590
    assert anthropic_tokens(4000, 3000) <= 1600  # scaled down first, never more than ~1,600
    assert anthropic_tokens(1, 1) == 1


def test_openai_tile_rule() -> None:
    assert openai_tokens(512, 512) == 85 + 170  # one tile
    assert openai_tokens(1024, 1024) == 85 + 170 * 4  # short side scaled to 768: 2 × 2 tiles
    assert openai_tokens(2048, 4096) == 85 + 170 * 6  # fit in 2048, then 768 × 1536: 2 × 3 tiles


def test_rule_by_provider() -> None:
    assert rule_of("openai:gpt-5.4") == "openai" and rule_of("anthropic:claude-sonnet-5-5") == "anthropic"
    assert rule_of("scripted:x.json") == "anthropic"  # the default: the larger count
    assert image_tokens(512, 512, "openai") == 255 and image_tokens(512, 512, None) == anthropic_tokens(512, 512)


def test_store_keeps_bytes_by_sha256_out_of_the_log(tmp_path) -> None:
    store = SpillStore.for_root(tmp_path)
    image = load_image(png(5, 5), "a.png")
    ref = store_image(store, image)
    assert ref.media_type == "image/png" and (ref.width, ref.height) == (5, 5) and ref.size == len(image.data)
    assert (store.dir / f"{ref.sha256}.img").read_bytes() == image.data and ref.sha256.startswith(ref.handle)
    assert store_image(store, image).handle == ref.handle  # same bytes, same file
    reader = ImageReader(store)
    assert reader(ref.handle) == image.data
    assert reader("abcdef123456") is None  # gone or never stored: None, never a crash
    assert "data" not in ref.to_data() and len(str(ref.to_data())) < 300
