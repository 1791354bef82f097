"""The filter gradients' forms the screen chose (tfpgo.tune.gradient_screen),
kept so that the next `--lower iree` of the same gradient on the same machine
and compiler takes the same form without timing it again: two runs of one
model build the same bytes (docs/lowering.md, "The same program from the same
model"), and the second skips the screen's compiles.

One SQLite file, `$XDG_CACHE_HOME/tfpgo/gradient_forms.db` (else
`~/.cache/tfpgo/`), one table `forms (key, choice)`: the key is the gradient
(shapes, window, element type, depthwise) and this machine's target (CPU,
features, compiler: `db_records.Target.host()`), the choice the form and each
form's time alone as JSON. Only timed choices are kept: one the budget left
untimed, or IREE could not time, is chosen again next time. A file that is not
such a cache is one error line naming it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.mlir.conv_gradient_forms import FilterGradient, FormChoice
from tfpgo.tune.db import default_path
from tfpgo.tune.db_records import Target

FILE = "gradient_forms.db"
_SCHEMA = "CREATE TABLE IF NOT EXISTS forms (key TEXT PRIMARY KEY, choice TEXT NOT NULL)"


def default_cache() -> Path:
    """Beside the tuning database: `$XDG_CACHE_HOME/tfpgo/gradient_forms.db`."""
    return default_path().with_name(FILE)


class FormCache:
    """The cache file at `path`, opened (created with its directories) on use."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, gradient: FilterGradient) -> FormChoice | None:
        """The choice kept for `gradient` on this target, if any."""
        rows = self._run("SELECT choice FROM forms WHERE key = ?", (_key(gradient),))
        if not rows:
            return None
        try:
            stored = json.loads(rows[0][0])
            alone = tuple((str(form), float(ps)) for form, ps in stored["alone_ps"])
            return FormChoice(str(stored["form"]), alone)
        except (KeyError, ValueError, TypeError) as error:
            raise self._unusable(error) from None

    def put(self, gradient: FilterGradient, choice: FormChoice) -> None:
        """Keeps a timed `choice` for `gradient` on this target."""
        stored = json.dumps({"form": choice.form, "alone_ps": [list(p) for p in choice.alone_ps]})
        self._run("INSERT OR REPLACE INTO forms VALUES (?, ?)", (_key(gradient), stored))

    def _run(self, statement: str, values: tuple[str, ...]) -> list[tuple[str, ...]]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=60)
            try:
                with connection:
                    connection.execute(_SCHEMA)
                    return connection.execute(statement, values).fetchall()
            finally:
                connection.close()
        except (sqlite3.Error, OSError) as error:
            raise self._unusable(error) from None

    def _unusable(self, error: Exception) -> UserError:
        return UserError(
            f"{self.path}: not a usable cache of gradient forms ({error}); delete it, "
            "and the next run times the forms again"
        )


def _key(gradient: FilterGradient) -> str:
    target = Target.host()
    return json.dumps(
        [gradient.text(), gradient.element, gradient.depthwise, target.cpu, target.features,
         target.compiler]
    )  # fmt: skip
