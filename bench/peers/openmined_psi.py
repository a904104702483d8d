#!/usr/bin/env python3
"""Baseline benchmark for the PyPI package `openmined-psi` (ECDH PSI on P-256).

Both parties of the protocol run in this one process, one after the other:

    client.CreateRequest(client_items)                      -> Request
    server.CreateSetupMessage(fpr, n, server_items, ds)     -> ServerSetup
    server.ProcessRequest(request)                          -> Response
    client.GetIntersection(setup, response)                 -> indices into client_items

with reveal_intersection=True and, by default, DataStructure.RAW (the server
sends its encrypted set itself, so the result is exact; `fpr` is ignored for RAW).
The intersection is checked against a Python set oracle; a wrong result exits 1.

Measured per repetition (the median over --reps is reported):
  * wall time   time.perf_counter() around the whole protocol (key creation
                included, test-data generation excluded)
  * CPU time    time.process_time() over the same region; since both parties
                run in this process it is client + server CPU together
  * bytes       ByteSize() of setup message + request + response
                (bytes_per_item = bytes_total / n, n = size of each set)

JSON (a list with one object per size) goes to stdout and, with --json FILE,
to FILE; one human-readable line per size goes to stderr.

Run it through run-openmined-psi.sh, which makes the venv and pins the version.
"""

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time

PACKAGE = "openmined-psi"
EXPECTED_VERSION = "2.0.6"


def parse_size(tok):
    tok = tok.strip().lower().replace(" ", "")
    if not tok:
        raise ValueError("empty size")
    if "^" in tok or "**" in tok:
        base, exp = tok.replace("**", "^").split("^", 1)
        val = int(base) ** int(exp)
    elif tok.endswith("k"):
        val = int(tok[:-1]) * 1024
    elif tok.endswith("m"):
        val = int(tok[:-1]) * 1024 * 1024
    else:
        val = int(tok)
    if val < 2:
        raise ValueError("size must be >= 2: %r" % tok)
    return val


def parse_sizes(text):
    try:
        return [parse_size(t) for t in text.split(",") if t.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def make_sets(n, overlap, seed):
    """Two lists of n distinct string ids each, sharing exactly `overlap` ids.

    Deterministic for a given (n, overlap, seed). Ids look like
    'uid-000123456789' (16 bytes), drawn at random from a 10^12 space, and
    both lists are shuffled so shared ids are not in matching positions.
    """
    rng = random.Random(seed)
    total = 2 * n - overlap
    nums = rng.sample(range(10**12), total)
    ids = ["uid-%012d" % k for k in nums]
    shared = ids[:overlap]
    server = shared + ids[overlap:n]
    client = shared + ids[n:total]
    rng.shuffle(server)
    rng.shuffle(client)
    return client, server


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_once(psi, ds, fpr, client_items, server_items, expected):
    """One full protocol run. Returns (metrics dict, ok, detail)."""
    n_client = len(client_items)
    max_threads = thread_count()
    gc.collect()
    gc.disable()
    try:
        w0 = time.perf_counter()
        c0 = time.process_time()

        client = psi.client.CreateWithNewKey(True)
        server = psi.server.CreateWithNewKey(True)

        t0 = time.perf_counter()
        request = client.CreateRequest(client_items)
        t1 = time.perf_counter()
        max_threads = max(max_threads, thread_count())
        setup = server.CreateSetupMessage(fpr, n_client, server_items, ds)
        t2 = time.perf_counter()
        max_threads = max(max_threads, thread_count())
        response = server.ProcessRequest(request)
        t3 = time.perf_counter()
        max_threads = max(max_threads, thread_count())
        indices = client.GetIntersection(setup, response)
        t4 = time.perf_counter()

        c1 = time.process_time()
        w1 = time.perf_counter()
    finally:
        gc.enable()
    max_threads = max(max_threads, thread_count())

    setup_b = setup.ByteSize()
    request_b = request.ByteSize()
    response_b = response.ByteSize()

    got_idx = list(indices)
    got = {client_items[i] for i in got_idx}
    ok = len(got_idx) == len(set(got_idx)) and got == expected
    detail = "" if ok else (
        "intersection mismatch: got %d indices (%d distinct ids), expected %d; "
        "missing %d, extra %d" % (len(got_idx), len(got), len(expected),
                                   len(expected - got), len(got - expected)))
    return {
        "wall_s": w1 - w0,
        "cpu_s": c1 - c0,
        "client_request_s": t1 - t0,
        "server_setup_s": t2 - t1,
        "server_process_s": t3 - t2,
        "client_intersect_s": t4 - t3,
        "setup_bytes": setup_b,
        "request_bytes": request_b,
        "response_bytes": response_b,
        "bytes_total": setup_b + request_b + response_b,
        "intersection_size": len(got),
        "max_threads": max_threads,
    }, ok, detail


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=parse_sizes, default=parse_sizes("2^16"),
                    help="comma-separated set sizes per party, e.g. 65536,262144 "
                         "or 2^16,2^18 (default 2^16)")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions per size; medians are reported (default 3)")
    ap.add_argument("--overlap", type=float, default=0.5,
                    help="fraction of each set that is shared (default 0.5)")
    ap.add_argument("--data-structure", choices=["RAW", "GCS", "BLOOM_FILTER"],
                    default="RAW",
                    help="server setup structure (default RAW: exact result)")
    ap.add_argument("--fpr", type=float, default=1e-9,
                    help="false-positive rate for GCS/BLOOM_FILTER (ignored by RAW)")
    ap.add_argument("--seed", type=int, default=20240601,
                    help="seed for the test identifiers (default 20240601)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the JSON document to FILE")
    ap.add_argument("--allow-other-version", action="store_true",
                    help="run even if openmined-psi is not version %s" % EXPECTED_VERSION)
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if not 0.0 <= args.overlap <= 1.0:
        ap.error("--overlap must be in [0, 1]")

    try:
        import private_set_intersection.python as psi
    except ImportError as e:
        print("cannot import openmined-psi (private_set_intersection): %s\n"
              "run bench/peers/run-openmined-psi.sh, which installs it" % e,
              file=sys.stderr)
        return 2
    version = getattr(psi, "__version__", "unknown")
    if version != EXPECTED_VERSION and not args.allow_other_version:
        print("openmined-psi version is %s, expected %s (use --allow-other-version)"
              % (version, EXPECTED_VERSION), file=sys.stderr)
        return 2

    ds_members = getattr(psi.DataStructure, "__members__", {})
    if args.data_structure not in ds_members:
        print("psi.DataStructure has no %s (has %s)"
              % (args.data_structure, ", ".join(ds_members)), file=sys.stderr)
        return 2
    ds = ds_members[args.data_structure]
    exact = args.data_structure == "RAW"

    env_threads = {k: os.environ.get(k) for k in
                   ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "RAYON_NUM_THREADS")}
    results = []
    failed = False
    for n in args.sizes:
        overlap = int(round(n * args.overlap))
        client_items, server_items = make_sets(n, overlap, args.seed + n)
        expected = set(client_items) & set(server_items)
        assert len(expected) == overlap

        load_before = os.getloadavg()
        runs = []
        size_ok = True
        for rep in range(args.reps):
            m, ok, detail = run_once(psi, ds, args.fpr, client_items, server_items,
                                     expected)
            if not ok:
                print("FAIL size=%d rep=%d: %s" % (n, rep, detail), file=sys.stderr)
                failed = True
                size_ok = False
            runs.append(m)
        load_after = os.getloadavg()

        def med(key):
            return statistics.median(r[key] for r in runs)

        bytes_set = sorted({r["bytes_total"] for r in runs})
        bytes_total = int(statistics.median(r["bytes_total"] for r in runs))
        res = {
            "size": n,
            "reps": args.reps,
            "wall_s_median": med("wall_s"),
            "cpu_s_median": med("cpu_s"),
            "bytes_total": bytes_total,
            "bytes_per_item": bytes_total / n,
            "data_structure": args.data_structure,
            "package_version": version,
            # extras
            "package": PACKAGE,
            "exact": exact,
            "fpr": None if exact else args.fpr,
            "overlap": overlap,
            "intersection_size": runs[-1]["intersection_size"],
            "verified": size_ok,
            "bytes_setup": int(med("setup_bytes")),
            "bytes_request": int(med("request_bytes")),
            "bytes_response": int(med("response_bytes")),
            "bytes_total_distinct_over_reps": bytes_set,
            "phase_s_median": {
                "client_request": med("client_request_s"),
                "server_setup": med("server_setup_s"),
                "server_process": med("server_process_s"),
                "client_intersect": med("client_intersect_s"),
            },
            "wall_s_all": [r["wall_s"] for r in runs],
            "cpu_s_all": [r["cpu_s"] for r in runs],
            "cpu_over_wall_median": statistics.median(
                r["cpu_s"] / r["wall_s"] for r in runs if r["wall_s"] > 0),
            "max_threads_seen": max(r["max_threads"] for r in runs),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
            "host": {
                "cpu_model": cpu_model(),
                "cpu_count": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "thread_env": env_threads,
            },
        }
        results.append(res)
        print("openmined-psi %s %s n=%d (2^%.2f) reps=%d: wall %.3f s, cpu %.3f s "
              "(both parties), %d B total = %.2f B/item, |I|=%d %s, load %.2f->%.2f"
              % (version, args.data_structure, n, _log2(n), args.reps,
                 res["wall_s_median"], res["cpu_s_median"], bytes_total,
                 res["bytes_per_item"], res["intersection_size"],
                 "OK" if res["verified"] else "WRONG",
                 load_before[0], load_after[0]),
              file=sys.stderr)

    doc = json.dumps(results, indent=2)
    print(doc)
    if args.json:
        with open(args.json, "w") as f:
            f.write(doc + "\n")
    return 1 if failed else 0


def _log2(n):
    import math
    return math.log2(n)


if __name__ == "__main__":
    sys.exit(main())
