"""The tfpgo tab of TensorBoard, served by a real TensorBoard over two pgo outputs in
one logdir: the tab is listed beside xprof's, its runs, a run's report and files,
and the diff of the two runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import tfpgo
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.tensorboard.plugin import find_runs

TENSORBOARD = Path(__file__).resolve().parents[2] / "tools" / "tfpgo_tensorboard.py"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    for name, batch in (("mlp_b4", 4), ("mlp_b8", 8)):
        options = FlowOptions(
            model="mlp", batch_size=batch, steps=2, output_dir=root / name, formats=("svg",)
        )
        run_flow(options)
    return root


@pytest.fixture(scope="module")
def board(logdir):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(Path(tfpgo.__file__).resolve().parents[1]))
    command = [sys.executable, str(TENSORBOARD), "--logdir", str(logdir), "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--host", "127.0.0.1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/data/plugins_listing", timeout=2):
                break
        except OSError:
            assert server.poll() is None, server.communicate()
            assert time.monotonic() < deadline, "TensorBoard did not start"
            time.sleep(0.5)
    yield base
    server.send_signal(signal.SIGINT)
    server.communicate(timeout=60)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def test_runs_are_the_pgo_outputs(logdir):
    assert find_runs(logdir) == ["mlp_b4", "mlp_b8"]


def test_the_tab_sits_beside_xprof(board):
    listing = json.loads(_get(f"{board}/data/plugins_listing"))
    assert listing["tfpgo"]["enabled"] is True
    assert listing["tfpgo"]["tab_name"] == "tfpgo"
    assert "profile" in listing  # xprof's Profile tab on the same logdir


def test_runs_reports_files_and_the_diff(board):
    runs = json.loads(_get(f"{board}/data/plugin/tfpgo/runs"))
    assert [run["run"] for run in runs] == ["mlp_b4", "mlp_b8"]
    assert {"trace.json", "model.annotated.mlir", "op_profile.json"} <= set(runs[0]["files"])
    report = _get(f"{board}/data/plugin/tfpgo/file?run=mlp_b4&path=report.html").decode()
    assert "tfpgo report: mlp" in report and "<svg" in report
    diff = _get(f"{board}/data/plugin/tfpgo/diff?a=mlp_b4&b=mlp_b8").decode()
    assert "mlp_b4" in diff and "mlp_b8" in diff
    module = _get(f"{board}/data/plugin/tfpgo/index.js").decode()
    assert "export async function render()" in module
    with pytest.raises(urllib.error.HTTPError) as outside:
        _get(f"{board}/data/plugin/tfpgo/file?run=mlp_b4&path=../mlp_b8/report.html")
    assert outside.value.code == 404


def test_the_tab_and_the_report_in_a_real_browser(board, logdir, tmp_path):
    """Headless Chromium over the DevTools protocol: the tab lists both runs, shows the
    chosen run's report, and its diff button shows the comparison; report.html opens
    on its own with its tables and pictures."""
    from browser import Browser

    with Browser() as browser:
        browser.open(f"{board}/data/plugin_entry.html?name=tfpgo")
        runs = browser.wait_for(
            "[...document.querySelector('select').options].map((o) => o.value)", "the runs"
        )
        assert runs == ["mlp_b4", "mlp_b8"]
        frame = "document.getElementById('tfpgo-report').contentDocument"
        title = browser.wait_for(
            f"{frame}.title.startsWith('tfpgo report') && {frame}.title", "report"
        )
        assert title == "tfpgo report: mlp"
        assert browser.evaluate(f"{frame}.querySelectorAll('table').length") > 3
        links = browser.evaluate("document.getElementById('tfpgo-files').textContent")
        assert "trace.json" in links and "model.annotated.mlir" in links
        assert browser.screenshot(tmp_path / "tab.png").stat().st_size > 10_000
        browser.evaluate("document.querySelector('button').click()")
        text = f"{frame}.body.textContent"
        diff = browser.wait_for(f"{text}.includes('mlp_b8') && {text}", "the diff")
        assert "mlp_b4" in diff
        browser.open((logdir / "mlp_b4" / "report.html").as_uri())
        browser.wait_for("document.readyState === 'complete'", "report.html")
        assert browser.evaluate("document.title") == "tfpgo report: mlp"
        assert browser.evaluate("document.querySelectorAll('svg').length") >= 2


def test_no_logdir_is_one_line():
    env = dict(os.environ, PYTHONPATH=str(Path(tfpgo.__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, str(TENSORBOARD)], capture_output=True, text=True, env=env, check=False
    )
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr
    assert err[0].startswith("tensorboard: error: A logdir or db must be specified")
