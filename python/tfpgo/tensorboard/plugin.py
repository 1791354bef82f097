"""The tfpgo tab of TensorBoard (its plugin API: `base_plugin.TBPlugin`).

Every directory under the logdir that holds a finished pgo output (`report.html`
and `op_profile.json`) is a run. The tab lists the runs; for the chosen one it
shows the report (its tables, the op graph and scope pictures inline) and links
the trace, the annotated and lowered modules and the other outputs; two runs are
compared with `profile_diff`'s comparison (`tfpgo.diff`), rendered on request.
xprof's own Profile tab reads the `plugins/profile` directories of the same
outputs, so both tabs stand side by side on one logdir.

Routes, under `/data/plugin/tfpgo/`: `index.js` (the tab, an ES module),
`runs` (JSON), `file?run=R&path=P` (a file of run R), `diff?a=R&b=S` (HTML).
"""

from __future__ import annotations

import json
import mimetypes
import tempfile
from pathlib import Path
from typing import Any

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tfpgo.errors import UserError

PLUGIN_NAME = "tfpgo"
RUN_MARKERS = ("report.html", "op_profile.json")
# Files a run's tab links, when the run has them.
LINKED = (
    "report.md",
    "trace.json",
    "speedscope.json",
    "model.annotated.mlir",
    "model.stablehlo.mlir",
    "model.linalg.mlir",
    "op_profile.json",
    "attribution.json",
    "analysis.json",
    "iree_profile.json",
    "model_explorer.json",
)
_INDEX_JS = Path(__file__).with_name("index.js")


def find_runs(logdir: Path) -> list[str]:
    """The pgo outputs under `logdir`, as paths relative to it, sorted."""
    found = {
        marker.parent
        for marker in logdir.rglob(RUN_MARKERS[0])
        if all((marker.parent / name).is_file() for name in RUN_MARKERS)
    }
    return sorted(str(run.relative_to(logdir)) for run in found)


class TfpgoPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        self._logdir = Path(context.logdir or ".").expanduser().resolve()

    def is_active(self) -> bool:
        return bool(find_runs(self._logdir))

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="tfpgo")

    def get_plugin_apps(self) -> dict[str, Any]:
        routes = {
            "/index.js": self._index_js,
            "/runs": self._runs,
            "/file": self._file,
            "/diff": self._diff,
        }
        return {path: wrappers.Request.application(route) for path, route in routes.items()}

    def _index_js(self, request: wrappers.Request) -> wrappers.Response:
        return http_util.Respond(request, _INDEX_JS.read_text(), "application/javascript")

    def _runs(self, request: wrappers.Request) -> wrappers.Response:
        runs = []
        for run in find_runs(self._logdir):
            directory = self._logdir / run
            linked = [name for name in LINKED if (directory / name).is_file()]
            runs.append({"run": run, "files": linked})
        return http_util.Respond(request, json.dumps(runs), "application/json")

    def _file(self, request: wrappers.Request) -> wrappers.Response:
        run_dir = self._run_dir(request.args.get("run", ""))
        path = (run_dir / request.args.get("path", "")).resolve() if run_dir else None
        if path is None or run_dir not in path.parents or not path.is_file():
            return http_util.Respond(request, "no such file in a run", "text/plain", code=404)
        kind = mimetypes.guess_type(path.name)[0] or "text/plain"
        return http_util.Respond(request, path.read_bytes(), kind)

    def _diff(self, request: wrappers.Request) -> wrappers.Response:
        from tfpgo.attribution.op_profile import OpProfile
        from tfpgo.diff import compare
        from tfpgo.diff.output import write_outputs

        names = [request.args.get("a", ""), request.args.get("b", "")]
        runs = [self._run_dir(name) for name in names]
        if runs[0] is None or runs[1] is None:
            return http_util.Respond(request, "unknown run", "text/plain", code=404)
        try:
            before, after = (OpProfile.read(run / "op_profile.json") for run in runs if run)
            diff = compare(before, after, names[0], names[1])
            with tempfile.TemporaryDirectory(prefix="tfpgo-tb-diff-") as scratch:
                written = write_outputs(diff, Path(scratch))
                page = next(path for path in written if path.suffix == ".html").read_text()
        except UserError as error:
            return http_util.Respond(request, str(error), "text/plain", code=400)
        return http_util.Respond(request, page, "text/html")

    def _run_dir(self, run: str) -> Path | None:
        """The directory of run `run` (one of find_runs), None for anything else."""
        return self._logdir / run if run in find_runs(self._logdir) else None
