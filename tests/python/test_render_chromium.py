"""Headless Chromium opens our SVGs: tooltips reach the DOM, the screenshot shows colors."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from render_fixtures import GRU_OP_GRAPH, MLP_EVENT_DAG, document_op, in_us, load

from tfpgo.cli import run_main
from tfpgo.render.plot_graph import main
from tfpgo.render.style import CRITICAL_COLOR, HOT_FILL, NEVER_FILL

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="Debian's chromium is not installed (apt-get install chromium)",
)
WINDOW = (1100, 1250)


def chromium(tmp_path: Path, *flags: str, url: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *flags,
        url,
    ]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=True)


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and raw RGB(A) rows of an 8-bit non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        header = body if kind == b"IHDR" else header
        chunks += [body] if kind == b"IDAT" else []
        offset += 12 + length
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and interlace == 0 and color_type in (2, 6)
    channels = 4 if color_type == 6 else 3
    raw, stride, rows = zlib.decompress(b"".join(chunks)), width * channels, []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(
            raw[start], bytearray(raw[start + 1 : start + 1 + stride]), previous, channels
        )
        rows.append(bytes(line))
        previous = line
    return width, height, [bytes(r[i : i + 3]) for r in rows for i in range(0, stride, channels)]


def _unfilter(kind: int, line: bytearray, previous: bytearray, channels: int) -> bytearray:
    """Undoes one PNG row filter (0 none, 1 sub, 2 up, 3 average, 4 Paeth)."""
    for x in range(len(line)):
        left = line[x - channels] if x >= channels else 0
        up, corner = previous[x], previous[x - channels] if x >= channels else 0
        if kind == 1:
            line[x] = (line[x] + left) & 0xFF
        elif kind == 2:
            line[x] = (line[x] + up) & 0xFF
        elif kind == 3:
            line[x] = (line[x] + (left + up) // 2) & 0xFF
        elif kind == 4:
            guess = left + up - corner
            da, db, dc = abs(guess - left), abs(guess - up), abs(guess - corner)
            best = left if da <= db and da <= dc else up if db <= dc else corner
            line[x] = (line[x] + best) & 0xFF
    return line


def rgb(hex_color: str) -> bytes:
    return bytes.fromhex(hex_color[1:])


def render_svg(tmp_path: Path, source: Path) -> Path:
    svg = tmp_path / (source.stem + ".svg")
    assert run_main(main, ["--path-to-mlir-graph", str(source), "-o", str(svg)]) == 0
    return svg


def test_svg_tooltips_reach_the_browser_dom(tmp_path):
    svg = render_svg(tmp_path, GRU_OP_GRAPH)
    dom = chromium(tmp_path, "--dump-dom", url=svg.as_uri()).stdout
    matmul = "while/body/_1/gru/MatMul"
    self_time = in_us(document_op(GRU_OP_GRAPH, matmul)["self"])
    assert "<svg" in dom and f"self: {self_time}" in dom and matmul in dom
    assert dom.count("xlink:title=") >= len(load(GRU_OP_GRAPH)["nodes"])  # one per node


@pytest.mark.parametrize(
    ("source", "marks"),
    [(GRU_OP_GRAPH, (HOT_FILL, NEVER_FILL)), (MLP_EVENT_DAG, (HOT_FILL, CRITICAL_COLOR))],
)
def test_screenshot_shows_the_colored_graph(tmp_path, source, marks):
    svg = render_svg(tmp_path, source)
    png = tmp_path / (source.stem + ".png")
    chromium(
        tmp_path, f"--screenshot={png}", f"--window-size={WINDOW[0]},{WINDOW[1]}", url=svg.as_uri()
    )
    width, height, pixels = decode_png(png.read_bytes())
    assert (width, height) == WINDOW
    counts: dict[bytes, int] = {}
    for pixel in pixels:
        counts[pixel] = counts.get(pixel, 0) + 1
    for mark in marks:
        assert counts.get(rgb(mark), 0) > 200, f"{mark} missing from the screenshot"
    assert len([c for c in counts.values() if c > 100]) >= 8  # the colormap, not a blank page
