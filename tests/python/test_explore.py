"""`explore`: a pgo output served by Model Explorer on 127.0.0.1, stopped by Ctrl-C
(a real server in its own process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import tfpgo
from tfpgo.cli import run_main
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.render import explore

EXPLORE = Path(__file__).resolve().parents[2] / "tools" / "explore.py"


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore") / "out"
    run_flow(FlowOptions(model="mlp", batch_size=4, steps=2, output_dir=out, formats=("svg",)))
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((explore.HOST, 0))
        return int(probe.getsockname()[1])


def test_every_module_with_its_node_data(output):
    found = explore.exploration(output)
    assert [m.name for m in found.modules] == ["model.annotated.mlir"]
    assert {(d.name, m.name) for d, m in found.node_data} == {
        ("model_explorer.json", "model.annotated.mlir"),
        ("model_explorer.kernels.json", "model.annotated.mlir"),
    }


def test_a_directory_without_a_pgo_output_is_one_line(tmp_path, capsys):
    assert run_main(explore.main, [str(tmp_path)], prog="explore") == 1
    assert capsys.readouterr().err.strip() == (
        f"explore: error: {tmp_path}: no model.annotated.mlir; name the output directory "
        "of a finished pgo run"
    )


@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_a_port_out_of_range_is_one_line(output, capsys, port):
    with pytest.raises(SystemExit) as exited:
        run_main(explore.main, [str(output), "--port", port], prog="explore")
    err = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(err) == 1 and "--port" in err[0], err


def test_a_port_in_use_is_one_line_before_any_work(tmp_path, capsys):
    from tfpgo.flow import pgo

    with socket.socket() as busy:
        busy.bind((explore.HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = tmp_path / "out"
        args = ["--explore", "--explore-port", str(port), "--output-dir", str(out)]
        assert run_main(pgo.main, args, prog="pgo") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"pgo: error: --explore-port {port}: cannot listen on {explore.HOST}:{port} (Address "
        "already in use); choose a free port with --explore-port"
    ]
    assert not out.exists()


def _start(output: Path, port: int) -> subprocess.Popen[str]:
    # Unbuffered: the URL line must reach the pipe while the server runs.
    package_root = str(Path(tfpgo.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=package_root, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, str(EXPLORE), str(output), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_serves_on_localhost_until_ctrl_c(output):
    port = _free_port()
    server = _start(output, port)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://{explore.HOST}:{port}/", timeout=2) as page:
                    assert page.status == 200
                    break
            except OSError:
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, "Model Explorer did not start"
                time.sleep(0.5)
        # Model Explorer's check for a newer release is answered offline: nothing
        # reaches for the network, and no thread waits on it after Ctrl-C.
        url = f"http://{explore.HOST}:{port}/api/v1/check_new_version"
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert json.loads(answer.read())["version"] == ""
    finally:
        server.send_signal(signal.SIGINT)
        stdout, stderr = server.communicate(timeout=15)
    assert f"http://{explore.HOST}:{port}/?data=" in stdout
    assert "model.annotated.mlir" in stdout and "model_explorer.kernels.json" in stdout
    assert "Traceback" not in stderr and server.returncode in (0, 130)


def test_the_fused_matmul_shows_its_kernels_time_in_model_explorer(output, tmp_path):
    """In a real browser (headless Chromium over the DevTools protocol): Model Explorer
    lists both tfpgo node data, and the MatMul TensorFlow ran inside the fused kernel
    named after its Relu shows that kernel's time, color and name in the page."""
    from browser import Browser

    times = json.loads((output / "model_explorer.json").read_text())
    kernels = json.loads((output / "model_explorer.kernels.json").read_text())
    ((function, data),) = times.items()
    labels = kernels[function]["results"]
    matmul = next(k for k, v in labels.items() if v["value"].split(": ")[1].startswith("MatMul+"))
    value, color = data["results"][matmul]["value"], data["results"][matmul]["bgColor"]
    label = labels[matmul]["value"]
    server = _start(output, _free_port())
    try:
        url = next(line.strip() for line in server.stdout or () if line.startswith("http://"))
        with Browser(timeout=180) as browser:
            browser.open(url)
            text = browser.wait_for(
                f"document.body.innerText.includes({json.dumps(label)}) && document.body.innerText",
                "Model Explorer's node data table",
            )
            assert "tfpgo self (µs)" in text and "tfpgo kernel" in text
            report = (output / "report.md").read_text()
            assert "- **variable reads**: " in report and "Model Explorer hides" in report
            # the value's cells in rows of a MatMul (the node data table), each with
            # the first background color behind it; waited for, since the table's
            # cells may render after the label text the wait above saw (a fresh-clone
            # CI run found none)
            colors = browser.wait_for(
                f"""[...document.querySelectorAll('*')]
                  .filter((e) => e.children.length === 0 && e.textContent.trim() === '{value}')
                  .filter((e) => (e.closest('tr')?.textContent || '').includes('MatMul'))
                  .map((cell) => {{
                    for (let e = cell; e; e = e.parentElement) {{
                      const color = getComputedStyle(e).backgroundColor;
                      if (color !== 'rgba(0, 0, 0, 0)') return color;
                    }}
                    return null; }})
                  .filter((color) => color)""",
                "the MatMul's colored value cells",
            )
            red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
            assert f"rgb({red}, {green}, {blue})" in colors, colors
            browser.screenshot(tmp_path / "model_explorer.png")
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)
