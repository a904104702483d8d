"""Receiver wall time of the command's bucketed run vs ``blindjoin.spark`` on the same files.

    python spark_vs_cli.py --bin target/release/blindjoin a.csv b.csv [--reps 3]
        [--buckets 16] [--lanes 2]

Makes nothing itself: write the files with ``blindjoin gen --size 2^20 a.csv b.csv``. Both
parties run kkrt16 with ``--normalize email`` on the column ``email``, B buckets over K lanes,
on loopback.

- The command: ``blindjoin receive -i a.csv -c email --buckets B --parallel K -o out.csv`` and
  ``blindjoin send -i b.csv …`` (each with ``--threads 2``), the receiver timed from its start
  to its exit.
- Spark: each party on a ``local[2]`` Spark of its own, in a process of its own (the sender in
  a child process of this script), each reading its CSV file with ``spark.read.csv(header=True)``
  (a Spark session already running, as in a Spark job). The receiver is timed around the
  ``blindjoin.spark.receive`` call, which returns once the matched rows are materialised and the
  run confirmed; the sender's Spark reads its file at the same time.

Every Spark run's matched rows are compared with the command's output file (the same rows, as
multisets of text rows). Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

MARK = "@@"


def free_ports(n: int) -> int:
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + n):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
    raise RuntimeError("no free port range")


def spark_session(app: str) -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def read(spark: Any, path: str) -> Any:
    # Every column as text, empty fields as "" (as the command reads a CSV file).
    return spark.read.csv(path, header=True, nullValue="\u0000", emptyValue="")


def serve_sender() -> None:
    """The sender's process: one run per JSON command on stdin, one JSON line back."""
    import blindjoin.spark

    spark = spark_session("blindjoin-bench-sender")
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            report = blindjoin.spark.send(read(spark, cmd["data"]), "email", **cmd["options"])
            out: dict[str, Any] = {"seconds": report["wall_seconds"]}
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out = {"error": f"{type(e).__name__}: {e}"}
        print(MARK + json.dumps(out), flush=True)


def sender_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise SystemExit("the Spark sender ended")


def cli_run(binary: str, a: str, b: str, out: str, buckets: int, lanes: int) -> float:
    port = free_ports(1)
    common = ["-c", "email", "--normalize", "email", "-p", "kkrt16", "--buckets", str(buckets),
              "--parallel", str(lanes), "-q"]
    sender = subprocess.Popen(
        [binary, "--threads", "2", "send", "-i", b, "--connect", f"127.0.0.1:{port}", *common],
        stderr=subprocess.PIPE,
    )
    t = time.monotonic()
    subprocess.run(
        [binary, "--threads", "2", "receive", "-i", a, "--listen", f"127.0.0.1:{port}", "-o", out,
         *common],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.monotonic() - t
    _, err = sender.communicate(timeout=600)
    if sender.returncode != 0:
        raise SystemExit(f"the command's sender failed: {err.decode(errors='replace')}")
    return seconds


def rows_of_file(path: str) -> tuple[list[str], list[tuple[str, ...]]]:
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r)
        return header, sorted(tuple(row) for row in r)


def main() -> None:
    if sys.argv[1:2] == ["--serve-sender"]:
        serve_sender()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=16)
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    out = os.path.abspath("spark_vs_cli.out.csv")

    import blindjoin.spark

    sender = subprocess.Popen(
        [sys.executable, __file__, "--serve-sender"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    t = time.monotonic()
    spark = spark_session("blindjoin-bench-receiver")
    assert sender_line(sender) == {"ready": True}
    print(f"both Spark sessions up in {time.monotonic() - t:.1f} s", flush=True)

    cli_times: list[float] = []
    spark_times: list[float] = []
    for rep in range(args.reps):
        cli = cli_run(args.bin, args.a, args.b, out, args.buckets, args.lanes)
        cli_times.append(cli)
        header, want = rows_of_file(out)

        port, base = free_ports(1), free_ports(args.lanes)
        options = {"buckets": args.buckets, "lanes": args.lanes, "lane_ports": base,
                   "normalize": "email", "protocol": "kkrt16"}
        assert sender.stdin is not None
        sender.stdin.write(json.dumps({"data": os.path.abspath(args.b), "options": {
            **options, "connect": f"127.0.0.1:{port}"}}) + "\n")
        sender.stdin.flush()
        df = read(spark, os.path.abspath(args.a))
        t = time.monotonic()
        result, report = blindjoin.spark.receive(
            df, "email", listen=f"127.0.0.1:{port}", return_report=True, **options
        )
        seconds = time.monotonic() - t
        sent = sender_line(sender)
        if "error" in sent:
            raise SystemExit(f"the Spark sender failed: {sent['error']}")
        spark_times.append(seconds)
        got = sorted(
            tuple("" if v is None else v for v in r) for r in result.select(*header).collect()
        )
        same = got == want
        phases = ", ".join(f"{p['name']} {p['seconds']:.2f}" for p in report["phases"])
        for lane in report["lane_stats"]:
            phases += f"; lane {lane['lane']}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in lane["phases"].items()
            )
        print(
            f"run {rep + 1}: command {cli:.2f} s, Spark {seconds:.2f} s ({seconds / cli:.2f}x; "
            f"{phases}); {len(want)} rows, {'the same rows' if same else 'ROWS DIFFER'}",
            flush=True,
        )
        if not same:
            raise SystemExit("the matched rows differ")
        result.unpersist()
    c, s = statistics.median(cli_times), statistics.median(spark_times)
    print(f"median: command {c:.2f} s, Spark {s:.2f} s ({s / c:.2f}x)")
    assert sender.stdin is not None
    sender.stdin.close()
    sender.wait(60)


if __name__ == "__main__":
    main()
