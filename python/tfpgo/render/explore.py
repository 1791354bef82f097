"""`explore`: a pgo output in Model Explorer, on this machine.

    bazel run //tools:explore -- pgo_out [--port 8080]
    bazel run //:pgo -- ... --explore

Starts Google's Model Explorer (`ai-edge-model-explorer`) on 127.0.0.1 with every
annotated module of the output and its node data: the tf module with
`model_explorer.json` (time) and `model_explorer.kernels.json` (the kernel each op
ran in), and with `--lower` the StableHLO and linalg modules with theirs (the
linalg one in the form its adapter reads, `model.linalg.explorer.mlir`). Model
Explorer prints the URL; Ctrl-C stops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfpgo import cli
from tfpgo.cli import ArgumentParser, port_number, user_path
from tfpgo.errors import UserError

# (module, its node data files), in the order Model Explorer lists them.
MODULES = (
    ("model.annotated.mlir", ("model_explorer.json", "model_explorer.kernels.json")),
    ("model.stablehlo.mlir", ("model_explorer.stablehlo.json",)),
    ("model.linalg.explorer.mlir", ("model_explorer.linalg.json",)),
)
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Exploration:
    modules: tuple[Path, ...]
    node_data: tuple[tuple[Path, Path], ...]  # (node data file, the module it colors)


def exploration(output_dir: Path) -> Exploration:
    """What a pgo output holds for Model Explorer; one error line if it holds none."""
    if not (output_dir / "model.annotated.mlir").is_file():
        raise UserError(
            f"{output_dir}: no model.annotated.mlir; name the output directory of a "
            "finished pgo run"
        )
    modules, node_data = [], []
    for module_name, data_names in MODULES:
        module = output_dir / module_name
        if module.is_file():
            modules.append(module)
            node_data += [
                (output_dir / n, module) for n in data_names if (output_dir / n).is_file()
            ]
    return Exploration(tuple(modules), tuple(node_data))


def check_port_free(port: int, flag: str = "--port") -> None:
    """One error line if 127.0.0.1:`port` cannot be listened on (before any work:
    Model Explorer would print its own message and exit 1, or quietly pick another
    port for 8080)."""
    cli.check_port_free(port, flag, HOST)


def _offline_version_check(print_msg: bool = True) -> dict[str, str]:
    """Stands in for Model Explorer's check against PyPI: nothing of tfpgo reaches
    for the network, and its non-daemon thread kept the process alive after Ctrl-C
    until the offline request timed out."""
    del print_msg
    return {"version": "", "runningVersion": "", "releaseUrl": "", "desktopAppUrl": ""}


def serve(found: Exploration, port: int) -> None:
    """Serves until Ctrl-C (KeyboardInterrupt, turned into exit status 130 by run_main)."""
    try:
        import model_explorer
        from model_explorer import server
    except ImportError:
        raise UserError(
            "Model Explorer is not installed (pip install ai-edge-model-explorer; "
            "tools/bootstrap.sh installs it)"
        ) from None
    check_port_free(port)
    server._check_new_version = _offline_version_check
    config = model_explorer.config()
    for module in found.modules:
        config.add_model_from_path(str(module))
    for data, module in found.node_data:
        config.add_node_data_from_path(str(data), model_name=module.name)
    model_explorer.visualize_from_config(config, host=HOST, port=port, no_open_in_browser=True)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="explore", description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", help="the --output-dir of a finished pgo run")
    parser.add_argument(
        "--port", type=port_number, default=8080, help="port on 127.0.0.1 (default 8080)"
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    found = exploration(user_path(args.output_dir))
    check_port_free(args.port)
    serve(found, args.port)
    return 0
