"""A small Chrome DevTools Protocol driver for headless Chromium (tests only).

`Browser()` starts `chromium --headless` with a fresh profile and remote debugging
on a free port (read from the profile's `DevToolsActivePort`), opens one page and
talks CDP over its websocket (`websocket-client`). `wait_for` polls a JavaScript
condition until it holds or the deadline passes: no sleep without a condition.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"


class Browser:
    def __init__(self, timeout: float = 60.0) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="tfpgo-chromium-")
        self.timeout = timeout
        self._process = subprocess.Popen(
            [
                CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--remote-debugging-port=0", f"--user-data-dir={self._profile.name}",
                "--window-size=1400,1000", "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port = self._until(self._debugging_port, "Chromium's DevTools port")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as listing:
            page = next(t for t in json.load(listing) if t["type"] == "page")
        self._socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout)
        self._ids = itertools.count(1)

    def _debugging_port(self) -> int | None:
        active = Path(self._profile.name) / "DevToolsActivePort"
        if self._process.poll() is not None:
            raise RuntimeError(f"{CHROMIUM} exited with status {self._process.returncode}")
        text = active.read_text() if active.is_file() else ""
        return int(text.split()[0]) if text.strip() else None

    def _until(self, probe: Any, what: str) -> Any:
        deadline = time.monotonic() + self.timeout
        while (found := probe()) in (None, False):
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {self.timeout:.0f} s for {what}")
            time.sleep(0.1)
        return found

    def call(self, method: str, **params: Any) -> dict:
        """One CDP command; events that arrive meanwhile are skipped."""
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        """The value of `expression` once it is truthy (exceptions count as false)."""
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
        return self._until(lambda: self.evaluate(guarded) or None, what)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._socket.close()
        self._process.terminate()
        self._process.wait(timeout=30)
        shutil.rmtree(self._profile.name, ignore_errors=True)  # Chromium's last writes race
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
