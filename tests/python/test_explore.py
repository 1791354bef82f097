"""`explore`: a pgo output served by Model Explorer on 127.0.0.1, stopped by Ctrl-C
(a real server in its own process)."""

from __future__ import annotations

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


def test_serves_on_localhost_until_ctrl_c(output):
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(Path(tfpgo.__file__).resolve().parents[1]))
    server = subprocess.Popen(
        [sys.executable, str(EXPLORE), str(output), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
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
    finally:
        server.send_signal(signal.SIGINT)
        stdout, stderr = server.communicate(timeout=60)
    assert f"http://{explore.HOST}:{port}/?data=" in stdout
    assert "model.annotated.mlir" in stdout and "model_explorer.kernels.json" in stdout
    assert "Traceback" not in stderr and server.returncode in (0, 130)
