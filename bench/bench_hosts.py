"""Multi-host logdirs: trace_reader reading N hosts serially vs in a process pool vs
on a local Dask cluster (run by hand).

    bazel run //bench:bench_hosts                                # 4 hosts of 300k events
    bazel run //bench:bench_hosts -- --hosts 2,8 --events 1000000
    bazel run //bench:bench_hosts -- --xplane real.xplane.pb     # copies of a real profile

The logdir holds N copies of one profile (synthetic, `synth_xplane.py`, or the
`--xplane` given), each under its own host file and hostname, as multi-worker
training writes them. Each contender is a fresh process running
`trace_reader.run` (read, DAG, op profile, both written): `--host-workers 1`
(serial), a process pool of min(N, CPUs), and `--scheduler` on a 2-worker
`LocalCluster` (processes, one thread each) started once by this benchmark.
Repeats are interleaved round-robin. Reported: median wall time of the process,
of `run()` and of its read stage (the part that is parallel), peak RSS (of the
largest process GNU time sees; the Dask workers are not its children), and the
serial / parallel ratios, and the CPU seconds of the process and its pool
workers (not of Dask's workers): the cost of going parallel, which unlike wall
time hardly depends on what else the machine runs. The outputs of every run
are checked to be byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import harness
import synth_xplane

from tfpgo.trace.readers.xplane_proto import xplane_pb2

RUN = """
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from tfpgo.trace import host_parts, hosts
from tfpgo.flow import trace_reader


def main():
    logdir, out, workers, scheduler = sys.argv[1:5]
    reading = host_parts.HostReading(
        None if workers == "-" else int(workers), None if scheduler == "-" else scheduler
    )
    clock = time.perf_counter()
    result = trace_reader.run(
        Path(logdir),
        dag_out=Path(out) / "mlir_graph.json",
        op_profile_out=Path(out) / "op_profile.json",
        reading=reading,
    )
    run_s = time.perf_counter() - clock
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu_s = sum(u.ru_utime + u.ru_stime for u in usage)
    print(json.dumps({"read": result.timings_s["read"], "run": run_s, "cpu": cpu_s}))


if __name__ == "__main__":
    main()
"""


def make_logdir(root: Path, profile: bytes, hosts: int) -> Path:
    """`hosts` copies of `profile`, `host-<i>.xplane.pb` each with hostname `host-<i>`."""
    run_dir = root / "plugins" / "profile" / "2026_11_23_00_00_00"
    run_dir.mkdir(parents=True)
    space = xplane_pb2().XSpace()
    space.ParseFromString(profile)
    for i in range(hosts):
        del space.hostnames[:]
        space.hostnames.append(f"host-{i}")
        (run_dir / f"host-{i}.xplane.pb").write_bytes(space.SerializeToString())
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="4", help="host counts, comma-separated (default 4)")
    parser.add_argument("--events", type=int, default=300_000, help="synthetic events a host")
    parser.add_argument("--xplane", type=Path, help="copy this real .xplane.pb instead")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask contender")
    args = parser.parse_args()
    counts = [int(n) for n in args.hosts.split(",") if n.strip()]
    if args.repeat < 1 or not counts or min(counts) < 2:
        parser.error("--repeat >= 1 and host counts >= 2")
    print(f"machine: {harness.machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="tfpgo_hosts_") as scratch:
        if args.xplane:
            profile = args.xplane.read_bytes()
        else:
            synthetic = Path(scratch, "synthetic.xplane.pb")
            synth_xplane.generate(args.events, synthetic)
            profile = synthetic.read_bytes()
        events = _count_events(profile)
        cluster = None if args.no_dask else _local_cluster()
        rows = []
        try:
            for hosts in counts:
                logdir = make_logdir(Path(scratch, f"logdir{hosts}"), profile, hosts)
                rows.append(_measure(hosts, events, logdir, Path(scratch), cluster, args.repeat))
        finally:
            if cluster is not None:
                cluster.close()
    header = ["hosts", "events", "contender", "process s", "run() s", "read s", "peak MB"]
    header += ["CPU s"]
    header += ["serial / this (process)", "serial / this (read)"]
    print(harness.markdown_table(header, [row for table in rows for row in table]))
    return 0


def _count_events(profile: bytes) -> int:
    space = xplane_pb2().XSpace()
    space.ParseFromString(profile)
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def _local_cluster() -> Any:
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=os.cpu_count() or 1,
        processes=True,
        threads_per_worker=1,
        dashboard_address=None,
    )


def _measure(
    hosts: int, events: int, logdir: Path, scratch: Path, cluster: Any, repeat: int
) -> list[list[object]]:
    """Every contender `repeat` times, interleaved round-robin (serial, pool, dask,
    serial, ...), so that a change in the machine's load hits them alike."""
    pool = str(min(hosts, os.cpu_count() or 1))  # explicit: small logdirs default to serial
    contenders = [("serial", "1", "-"), ("process pool", pool, "-")]
    if cluster is not None:
        contenders.append(("dask LocalCluster", "-", cluster.scheduler_address))
    env = harness.python_env()
    runs: dict[str, list[tuple[float, float, str]]] = {label: [] for label, _, _ in contenders}
    outputs: dict[str, bytes] = {}
    for attempt in range(repeat):
        for label, workers, scheduler in contenders:
            out = scratch / f"out_{hosts}_{label.split()[0]}_{attempt}"
            out.mkdir()
            command = harness.python_command(RUN, logdir, out, workers, scheduler)
            wall, rss, stdout = harness.run_once(command, env)
            runs[label].append((wall, rss, stdout.strip()))
            names = ("mlir_graph.json", "op_profile.json")
            outputs[f"{label} {attempt}"] = b"".join((out / n).read_bytes() for n in names)
            shutil.rmtree(out)
            print(
                f"{hosts} hosts, {label}, run {attempt + 1}: {wall:.2f} s "
                f"(load {harness.load_avg_1m()})",
                flush=True,
            )
    if len(set(outputs.values())) != 1:
        raise harness.BenchError(f"{hosts} hosts: the contenders' outputs differ")
    print(f"{hosts} hosts: outputs identical across contenders and runs", flush=True)
    medians = {}
    for label, samples in runs.items():
        stages = [json.loads(stdout.splitlines()[-1]) for _, _, stdout in samples]
        medians[label] = (
            statistics.median(wall for wall, _, _ in samples),
            statistics.median(s["run"] for s in stages),
            statistics.median(s["read"] for s in stages),
            max(rss for _, rss, _ in samples),
            statistics.median(s["cpu"] for s in stages),
        )
    serial_s, _, serial_read_s, _, _ = medians["serial"]
    return [
        [
            hosts,
            f"{hosts * events:,}",
            label,
            wall,
            run_s,
            read_s,
            f"{rss:.0f}",
            cpu_s,
            f"{serial_s / wall:.2f}x",
            f"{serial_read_s / read_s:.2f}x",
        ]
        for label, (wall, run_s, read_s, rss, cpu_s) in medians.items()
    ]


if __name__ == "__main__":
    harness.run_main(main, "bench_hosts")
