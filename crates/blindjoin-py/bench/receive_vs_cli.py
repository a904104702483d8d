"""Receiver wall time of the command vs the Python package on the same files.

    python receive_vs_cli.py --bin target/release/blindjoin a.csv b.csv [--reps 3]

Makes nothing itself: write the files with `blindjoin gen --size 2^20 a.csv b.csv`. In every
run the sender is the command on b.csv, listening on loopback, started first (so its input is
read before the receiver starts); the receiver connects. The command's receiver is timed from
its start to its exit (`receive -i a.csv -c email --normalize email -p kkrt16`, no output
file); the Python receiver is timed around the `blindjoin.receive` call only, on a DataFrame
read beforehand with `pd.read_csv(a.csv, dtype=str, keep_default_na=False)`. Prints each run
and the medians.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import time

import pandas as pd

import blindjoin


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_sender(binary: str, b: str, port: int) -> subprocess.Popen[bytes]:
    sender = subprocess.Popen(
        [binary, "send", "-q", "-i", b, "-c", "email", "--normalize", "email", "-p", "kkrt16",
         "--listen", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
    )
    # Wait until it listens (its first stderr line says so).
    assert sender.stderr is not None
    sender.stderr.readline()
    time.sleep(2.0)  # its input is read while it waits
    return sender


def finish(sender: subprocess.Popen[bytes]) -> None:
    _, err = sender.communicate(timeout=300)
    if sender.returncode != 0:
        raise SystemExit(f"the sender failed: {err.decode(errors='replace')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the blindjoin binary")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()

    cli, py = [], []
    df = pd.read_csv(args.a, dtype=str, keep_default_na=False)
    for rep in range(args.reps):
        port = free_port()
        sender = start_sender(args.bin, args.b, port)
        t = time.perf_counter()
        subprocess.run(
            [args.bin, "receive", "-q", "-i", args.a, "-c", "email", "--normalize", "email",
             "-p", "kkrt16", "--connect", f"127.0.0.1:{port}"],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        cli.append(time.perf_counter() - t)
        finish(sender)

        port = free_port()
        sender = start_sender(args.bin, args.b, port)
        t = time.perf_counter()
        matched = blindjoin.receive(
            df, column="email", normalize="email", protocol="kkrt16", connect=f"127.0.0.1:{port}"
        )
        py.append(time.perf_counter() - t)
        finish(sender)
        print(f"run {rep + 1}: command {cli[-1]:.3f} s, Python {py[-1]:.3f} s "
              f"({len(matched)} rows matched)", flush=True)
    c, p = statistics.median(cli), statistics.median(py)
    print(f"median of {args.reps}: command {c:.3f} s, Python {p:.3f} s, ratio {p / c:.2f}")


if __name__ == "__main__":
    main()
