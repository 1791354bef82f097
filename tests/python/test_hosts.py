"""Multi-host logdirs (tfpgo.trace.hosts): hosts read in a process pool or on a Dask cluster
give byte for byte the outputs of the serial read; bad input is one error line.

The logdirs hold real profiles from tests/data, one per host file, as multi-worker
training writes them (`plugins/profile/<run>/<host>.xplane.pb`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import trace_fixtures as fx

from tfpgo import cli, errors
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow import trace_reader
from tfpgo.trace import host_parts, hosts
from tfpgo.trace.readers import resolve_xplanes, xplane
from tfpgo.trace.readers.xplane_proto import xplane_pb2

DATA = fx.DATA.parent
RUN = "2026_11_23_12_00_00"
OUTPUTS = ("mlir_graph.json", "op_profile.json", "hlo_profile.json")


def write_host(run_dir: Path, file_name: str, profile: Path, hostname: str | None) -> None:
    """`profile` as `<file_name>.xplane.pb`; `hostname` replaces the one it recorded."""
    space = xplane_pb2().XSpace()
    space.ParseFromString(profile.read_bytes())
    if hostname is not None:
        del space.hostnames[:]
        space.hostnames.append(hostname)
    (run_dir / f"{file_name}.xplane.pb").write_bytes(space.SerializeToString())


def make_logdir(root: Path, hosts_: list[tuple[str, Path, str | None]]) -> Path:
    run_dir = root / "plugins" / "profile" / RUN
    run_dir.mkdir(parents=True)
    for file_name, profile, hostname in hosts_:
        write_host(run_dir, file_name, profile, hostname)
    return root


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four hosts from three different real profiles; the last two files are copies of
    one profile that keep its recorded hostname, so they share a host (as the serial
    read merges them: same tracks, steps of both)."""
    return make_logdir(
        tmp_path_factory.mktemp("hosts"),
        [
            ("worker-0", fx.XPLANE, "worker-0"),
            ("worker-1", DATA / "tf2_21" / "train" / "trace.xplane.pb", "worker-1"),
            ("worker-2a", DATA / "tf2_21" / "gru" / "trace.xplane.pb", None),
            ("worker-2b", DATA / "tf2_21" / "gru" / "trace.xplane.pb", None),
        ],
    )


@pytest.fixture(scope="module")
def xla_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host running TF kernels and one running an XLA-compiled step (HLO modules)."""
    return make_logdir(
        tmp_path_factory.mktemp("xla_hosts"),
        [
            ("host-a", DATA / "xla" / "infer" / "trace.xplane.pb", "host-a"),
            ("host-b", DATA / "tf2_21" / "conv_train" / "trace.xplane.pb", "host-b"),
        ],
    )


def read_to(logdir: Path, out: Path, reading: host_parts.HostReading) -> dict[str, bytes]:
    out.mkdir()
    trace_reader.run(
        logdir,
        dag_out=out / OUTPUTS[0],
        op_profile_out=out / OUTPUTS[1],
        hlo_profile_out=out / OUTPUTS[2],
        reading=reading,
    )
    return {name: (out / name).read_bytes() for name in OUTPUTS if (out / name).exists()}


@pytest.fixture(scope="module")
def serial(logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return read_to(logdir, tmp_path_factory.mktemp("serial") / "out", host_parts.HostReading(1))


def test_merge_of_host_parts_is_the_serial_table(logdir):
    files = resolve_xplanes(logdir)
    source = str(files[0].parent)
    want = xplane.read_xplane_files(files, source).build()
    got = host_parts.merge_parts(
        [host_parts.read_host(str(f), source) for f in files], source
    ).build()
    assert (got.names, got.tracks, got.steps) == (want.names, want.tracks, want.steps)
    for column in ("name_id", "track_id", "start_ps", "duration_ps", "step", "flows"):
        assert np.array_equal(getattr(got, column), getattr(want, column)), column
    assert got.stats == want.stats and list(got.stats) == list(want.stats)
    assert got.hosts == ["vm", "worker-0", "worker-1"]
    # Each file counts from its own earliest line; the merge shifted all but the first.
    bases = {host_parts.read_host(str(f), source).base_ns for f in files}
    assert len(bases) > 1


def test_process_pool_writes_the_serial_outputs_byte_for_byte(logdir, serial, tmp_path):
    assert read_to(logdir, tmp_path / "pool", host_parts.HostReading(workers=2)) == serial
    assert set(serial) == {"mlir_graph.json", "op_profile.json"}


def test_hlo_modules_of_one_host_merge_as_in_the_serial_read(xla_logdir):
    # In this process: the worker of a pool would import TensorFlow (XLA's hlo_pb2) again.
    files = resolve_xplanes(xla_logdir)
    source = str(files[0].parent)
    want = xplane.read_xplane_files(files, source).build()
    got = host_parts.merge_parts(
        [host_parts.read_host(str(f), source) for f in files], source
    ).build()
    assert want.hlo_modules and list(got.hlo_modules.items()) == list(want.hlo_modules.items())
    assert np.array_equal(got.start_ps, want.start_ps) and got.hosts == ["host-a", "host-b"]


def test_damaged_host_file_is_one_line_naming_it(logdir, tmp_path, capsys):
    damaged = tmp_path / "logdir"
    shutil.copytree(logdir, damaged)
    host = damaged / "plugins" / "profile" / RUN / "worker-1.xplane.pb"
    host.write_bytes(host.read_bytes()[:1000])
    out = tmp_path / "op_profile.json"
    argv = ["--path-to-trace", str(damaged), "--op-profile", str(out), "--host-workers", "2"]
    assert cli.run_main(trace_reader.main, argv, prog="trace_reader") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{host}: not a valid XSpace protobuf" in err
    assert not out.exists()


def test_unreachable_scheduler_is_one_line(logdir, tmp_path, capsys):
    out = tmp_path / "op_profile.json"
    argv = ["--path-to-trace", str(logdir), "--op-profile", str(out)]
    argv += ["--scheduler", "tcp://127.0.0.1:1", "--scheduler-timeout", "1"]
    assert cli.run_main(trace_reader.main, argv, prog="trace_reader") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "trace_reader: error: --scheduler tcp://127.0.0.1:1: cannot reach the Dask scheduler"
    )
    assert not out.exists()


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as local:
        yield local


def test_dask_cluster_gives_the_local_result(logdir, serial, cluster, tmp_path, capsys):
    out = tmp_path / "dask"
    out.mkdir()
    argv = ["--path-to-trace", str(logdir), "--scheduler", cluster.scheduler_address]
    argv += ["--store-output", str(out / OUTPUTS[0]), "--op-profile", str(out / OUTPUTS[1])]
    assert cli.run_main(trace_reader.main, [*argv, "--quiet"], prog="trace_reader") == 0
    assert {name: (out / name).read_bytes() for name in OUTPUTS[:2]} == serial
    # Percentiles come from every exact duration on either path, not from a summary.
    (tmp_path / "local.json").write_bytes(serial["op_profile.json"])
    local = OpProfile.read(tmp_path / "local.json")
    merged = OpProfile.read(out / OUTPUTS[1])
    assert [(op.name, op.p50_ps, op.p95_ps) for op in merged.ops] == [
        (op.name, op.p50_ps, op.p95_ps) for op in local.ops
    ]


def test_damaged_host_file_on_the_cluster_is_one_line(logdir, cluster, tmp_path, capsys):
    damaged = tmp_path / "logdir"
    shutil.copytree(logdir, damaged)
    host = damaged / "plugins" / "profile" / RUN / "worker-0.xplane.pb"
    host.write_bytes(b"\x0a\xff\xff\xff\x0f not an xspace")
    out = tmp_path / "op_profile.json"
    argv = ["--path-to-trace", str(damaged), "--op-profile", str(out)]
    argv += ["--scheduler", cluster.scheduler_address]
    assert cli.run_main(trace_reader.main, argv, prog="trace_reader") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{host.absolute()}: not a valid XSpace protobuf" in err
    assert not out.exists()


def test_the_flow_passes_the_host_reading_on():
    from tfpgo.flow import pgo as flow_cli

    argv = ["--scheduler", "tcp://10.0.0.1:8786", "--host-workers", "3", "--scheduler-timeout", "5"]
    options = flow_cli.options_from_args(flow_cli.build_parser().parse_args(argv))
    assert options.host_reading == host_parts.HostReading(3, "tcp://10.0.0.1:8786", 5.0)
    assert flow_cli.options_from_args(flow_cli.build_parser().parse_args([])).host_reading == (
        host_parts.HostReading()
    )


class _ClientWithoutTfpgo:
    """Stands for a Client whose workers lack tfpgo (`find_spec` answers None)."""

    closed = False

    def run(self, function, name):
        return {"tcp://10.0.0.2:40000": None, "tcp://10.0.0.3:40000": function("json")}

    def close(self):
        self.closed = True


def test_workers_without_tfpgo_are_one_line_before_any_task():
    # A task a worker cannot unpickle is retried forever; the probe fails at once.
    from tfpgo import dask_cluster

    client = _ClientWithoutTfpgo()
    with pytest.raises(errors.UserError) as error:
        dask_cluster.check_workers_import(client, "tcp://10.0.0.1:8786", "tfpgo.trace.host_parts")
    assert str(error.value) == (
        "--scheduler tcp://10.0.0.1:8786: workers of the Dask cluster cannot import tfpgo "
        "(tcp://10.0.0.2:40000); install tfpgo on the workers and the scheduler, or put it "
        "on their PYTHONPATH"
    )
    assert client.closed


def test_small_logdirs_are_read_serially_unless_told(logdir):
    # Starting processes costs more than reading a few MB: the default stays serial.
    files = resolve_xplanes(logdir)
    assert sum(f.stat().st_size for f in files) < hosts.POOL_MIN_BYTES
    assert hosts._local_workers(host_parts.HostReading(), files) == 1
    assert hosts._local_workers(host_parts.HostReading(workers=2), files) == 2
    assert hosts._local_workers(host_parts.HostReading(workers=8), files) == len(files)
