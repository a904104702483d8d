#!/usr/bin/env python3
"""Helpers of bench/files.sh: ports, Parquet conversion, recording, checking, reporting.

Run with the DuckDB venv's interpreter (bench/peers/run-duckdb.sh --print-python):
everything but `to-parquet` and reading Parquet outputs needs only the standard
library, and those import duckdb when called.

Subcommands:
  parse-size TOKEN            print the integer size (65536, 2^16, 64k, 1e6)
  port                        print a free TCP port on 127.0.0.1
  pick-column FILE            print the CSV header's e-mail column
  to-parquet SRC.csv DST      write SRC as Parquet, every column VARCHAR
  record-blindjoin ...        append one blindjoin run to the runs file (JSON lines)
  record-duckdb ...           append one DuckDB run to the runs file
  compare --column C FILE...  check that all files hold the same rows (exit 1 if not)
  check-counts --runs F --size N
                              check that every run of size N matched the same row count
  write-meta --out F KEY=VALUE...
                              write the run's settings as a JSON object
  report --runs F [--json F]  medians per size, a markdown table on stdout
"""

import argparse
import collections
import csv
import datetime
import json
import os
import platform
import re
import socket
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")

# Receiver phases that read, normalise and hash the input (blindjoin's names are
# "read input" and "hash items").
READ_HASH_PHASE = re.compile(r"read|normal|hash", re.IGNORECASE)


def parse_size(tok):
    t = tok.strip().lower().replace(" ", "")
    if "^" in t or "**" in t:
        base, exp = t.replace("**", "^").split("^", 1)
        val = int(base) ** int(exp)
    elif t.endswith("k"):
        val = int(t[:-1]) * 1024
    elif t.endswith("m"):
        val = int(t[:-1]) * 1024 * 1024
    elif "e" in t:
        val = int(float(t))
    else:
        val = int(t)
    if val < 2:
        raise ValueError("size must be >= 2: %r" % tok)
    return val


def size_label(n):
    e = n.bit_length() - 1
    return "2^%d" % e if n == 1 << e else str(n)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pick_column(path):
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    for name in header:
        if name.strip().lower() in ("email", "e-mail", "email_address", "mail"):
            return name
    for name in header:
        if "mail" in name.lower():
            return name
    raise SystemExit("%s: no e-mail column in the header %r" % (path, header))


def to_parquet(src, dst):
    sys.path.insert(0, PEERS)
    import duckdb
    import duckdb_join
    con = duckdb.connect(":memory:")
    try:
        con.execute("COPY (SELECT * FROM %s) TO %s (FORMAT parquet)"
                    % (duckdb_join.source_sql(src), duckdb_join.sql_str(dst)))
        types = {t for _, t, *_ in con.execute(
            "DESCRIBE SELECT * FROM read_parquet(%s)" % duckdb_join.sql_str(dst)).fetchall()}
    finally:
        con.close()
    if types != {"VARCHAR"}:
        raise SystemExit("%s: columns are %s, expected VARCHAR only" % (dst, sorted(types)))


def read_rss_kib(path):
    """Peak RSS in KiB from `/usr/bin/time -f %M -o path` (last line), or None."""
    if not path or not os.path.isfile(path):
        return None
    with open(path) as f:
        lines = [ln.strip() for ln in f if ln.strip()]
    if not lines or not lines[-1].isdigit():
        return None
    return int(lines[-1])


def load_json(path):
    with open(path) as f:
        return json.load(f)


def append(runs, rec):
    with open(runs, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def record_blindjoin(a):
    r = load_json(a.r_json)
    s = load_json(a.s_json)
    phases = r.get("phases") or []
    read_hash = [p for p in phases if READ_HASH_PHASE.search(p.get("name", ""))]
    read_hash_s = sum(p["seconds"] for p in read_hash)
    rss_r = read_rss_kib(a.r_time)
    rss_s = read_rss_kib(a.s_time)
    rec = {
        "kind": "blindjoin",
        "size": a.size,
        "rep": a.rep,
        "format": a.format,
        "input_bytes": a.input_bytes,
        "receiver_wall_outside_s": a.wall,
        "receiver_wall_s": r.get("wall_seconds"),
        "sender_wall_s": s.get("wall_seconds"),
        "receiver_cpu_s": r.get("cpu_seconds"),
        "sender_cpu_s": s.get("cpu_seconds"),
        "receiver_phases": phases,
        "sender_phases": s.get("phases"),
        "read_hash_phases": [p["name"] for p in read_hash],
        "read_hash_s": read_hash_s,
        "read_hash_mb_per_s": (a.input_bytes / 1e6 / read_hash_s) if read_hash_s > 0 else None,
        # /usr/bin/time's %M; the JSON report's peak_rss_bytes when there is no time(1)
        "receiver_peak_rss_bytes": rss_r * 1024 if rss_r is not None else r.get("peak_rss_bytes"),
        "sender_peak_rss_bytes": rss_s * 1024 if rss_s is not None else s.get("peak_rss_bytes"),
        "receiver_peak_rss_source": "time" if rss_r is not None else (
            "json" if r.get("peak_rss_bytes") is not None else None),
        "matched_rows": (r.get("intersection") or {}).get("rows"),
        "matched_keys": (r.get("intersection") or {}).get("distinct_keys"),
        "input": r.get("input"),
        "traffic": r.get("traffic"),
        "threads": r.get("threads"),
        "protocol": r.get("protocol"),
    }
    append(a.runs, rec)


def record_duckdb(a):
    d = load_json(a.result)
    append(a.runs, {
        "kind": "duckdb",
        "size": a.size,
        "rep": a.rep,
        "format": d["format"],
        "threads": d["threads"],
        "wall_s": d["wall_s_median"],
        "matched_rows": d["matched_rows"],
        "duckdb_version": d["duckdb_version"],
        "trim": d["trim"],
        "sql": d["sql"],
    })


def read_rows(path):
    """(header, Counter of rows) of a CSV (with header) or Parquet file; NULL reads as ''."""
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic == b"PAR1":
        import duckdb
        con = duckdb.connect(":memory:")
        try:
            cur = con.execute("SELECT * FROM read_parquet(?)", [path])
            header = [d[0] for d in cur.description]
            rows = collections.Counter(
                tuple("" if v is None else str(v) for v in row) for row in cur.fetchall())
        finally:
            con.close()
        return header, rows
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.reader(f)
        header = next(rd, [])
        rows = collections.Counter(tuple(row) for row in rd)
    return header, rows


def compare(a):
    ref_path = a.files[0]
    ref_header, ref = read_rows(ref_path)
    ok = True
    for path in a.files[1:]:
        header, rows = read_rows(path)
        if header != ref_header:
            print("DIFFERENT HEADERS: %s has %r, %s has %r"
                  % (ref_path, ref_header, path, header), file=sys.stderr)
            ok = False
            continue
        if rows != ref:
            only_ref = ref - rows
            only_other = rows - ref
            print("DIFFERENT ROWS: %s has %d rows, %s has %d; %d only in the first, %d only in "
                  "the second" % (ref_path, sum(ref.values()), path, sum(rows.values()),
                                  sum(only_ref.values()), sum(only_other.values())),
                  file=sys.stderr)
            col = ref_header.index(a.column) if a.column in ref_header else None
            for label, extra in (("only in " + ref_path, only_ref), ("only in " + path, only_other)):
                for row in list(extra)[:5]:
                    key = repr(row[col]) if col is not None and col < len(row) else ""
                    print("  %s: %s  key %s" % (label, ",".join(row), key), file=sys.stderr)
            ok = False
    if ok:
        print("%d files agree: %d rows" % (len(a.files), sum(ref.values())), file=sys.stderr)
    return 0 if ok else 1


def check_counts(a):
    counts = collections.defaultdict(list)
    with open(a.runs) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                if r["size"] == a.size:
                    label = "%s %s%s" % (r["kind"], r["format"],
                                          " %dt" % r["threads"] if r["kind"] == "duckdb" else "")
                    counts[r["matched_rows"]].append("%s rep %d" % (label, r["rep"]))
    if len(counts) != 1:
        for n, who in sorted(counts.items(), key=lambda kv: str(kv[0])):
            print("  %s matched rows: %s" % (n, ", ".join(who)), file=sys.stderr)
        return 1
    return 0


def write_meta(a):
    meta = {}
    for kv in a.pairs:
        if "=" not in kv:
            raise SystemExit("write-meta: not KEY=VALUE: %r" % kv)
        k, v = kv.split("=", 1)
        meta[k] = v
    with open(a.out, "w") as f:
        f.write(json.dumps(meta, indent=2) + "\n")


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(runs, size):
    mine = [r for r in runs if r["size"] == size]
    out = {"size": size, "size_label": size_label(size)}
    for fmt in ("csv", "parquet"):
        bj = [r for r in mine if r["kind"] == "blindjoin" and r["format"] == fmt]
        if bj:
            out["blindjoin_" + fmt] = {
                "reps": len(bj),
                "receiver_wall_outside_s": median_or_none(r["receiver_wall_outside_s"] for r in bj),
                "receiver_wall_s": median_or_none(r["receiver_wall_s"] for r in bj),
                "sender_wall_s": median_or_none(r["sender_wall_s"] for r in bj),
                "receiver_cpu_s": median_or_none(r["receiver_cpu_s"] for r in bj),
                "sender_cpu_s": median_or_none(r["sender_cpu_s"] for r in bj),
                "read_hash_s": median_or_none(r["read_hash_s"] for r in bj),
                "read_hash_mb_per_s": median_or_none(r["read_hash_mb_per_s"] for r in bj),
                "receiver_peak_rss_bytes": median_or_none(r["receiver_peak_rss_bytes"] for r in bj),
                "sender_peak_rss_bytes": median_or_none(r["sender_peak_rss_bytes"] for r in bj),
                "matched_rows": sorted({r["matched_rows"] for r in bj}, key=str),
                "receiver_phases_median_s": {
                    name: statistics.median(
                        p["seconds"] for r in bj for p in r["receiver_phases"] if p["name"] == name)
                    for name in [p["name"] for p in bj[0]["receiver_phases"]]
                },
            }
        for t in (2, 1):
            dk = [r for r in mine if r["kind"] == "duckdb" and r["format"] == fmt
                  and r["threads"] == t]
            if dk:
                out["duckdb_%s_%dt" % (fmt, t)] = {
                    "reps": len(dk),
                    "wall_s": median_or_none(r["wall_s"] for r in dk),
                    "matched_rows": sorted({r["matched_rows"] for r in dk}, key=str),
                }
    bj = out.get("blindjoin_csv", {}).get("receiver_wall_outside_s")
    d2 = out.get("duckdb_csv_2t", {}).get("wall_s")
    out["ratio_blindjoin_over_duckdb_2t_csv"] = (bj / d2) if bj and d2 else None
    return out


def fmt_s(v):
    return "-" if v is None else "%.3f" % v


def fmt_mib(v):
    return "-" if v is None else "%.0f" % (v / 2**20)


def report(a):
    runs = []
    with open(a.runs) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    meta = load_json(a.meta) if a.meta else {}
    sizes = []
    for r in runs:
        if r["size"] not in sizes:
            sizes.append(r["size"])
    summary = [summarise(runs, n) for n in sizes]
    pq_status = meta.get("blindjoin_parquet", "supported")
    pq_cell = "not supported" if pq_status != "supported" else None

    lines = [
        "| size | rows of A | blindjoin receiver wall, CSV (s) | blindjoin, Parquet (s) "
        "| DuckDB 2 threads, CSV (s) | DuckDB 1 thread, CSV (s) "
        "| DuckDB 2 threads, Parquet (s) | DuckDB 1 thread, Parquet (s) "
        "| blindjoin / DuckDB 2t | read+hash (MB/s) | peak RSS receiver (MiB) "
        "| peak RSS sender (MiB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in summary:
        bj = s.get("blindjoin_csv", {})
        bjp = s.get("blindjoin_parquet", {})
        rows_a = next((r["input"]["rows"] for r in runs if r["size"] == s["size"]
                       and r["kind"] == "blindjoin" and r.get("input")), None)
        ratio = s["ratio_blindjoin_over_duckdb_2t_csv"]
        mbps = bj.get("read_hash_mb_per_s")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s["size_label"],
            "-" if rows_a is None else "{:,}".format(rows_a),
            fmt_s(bj.get("receiver_wall_outside_s")),
            pq_cell or fmt_s(bjp.get("receiver_wall_outside_s")),
            fmt_s(s.get("duckdb_csv_2t", {}).get("wall_s")),
            fmt_s(s.get("duckdb_csv_1t", {}).get("wall_s")),
            fmt_s(s.get("duckdb_parquet_2t", {}).get("wall_s")),
            fmt_s(s.get("duckdb_parquet_1t", {}).get("wall_s")),
            "-" if ratio is None else "%.1fx" % ratio,
            "-" if mbps is None else "%.0f" % mbps,
            fmt_mib(bj.get("receiver_peak_rss_bytes")),
            fmt_mib(bj.get("sender_peak_rss_bytes")),
        ))
    table = "\n".join(lines)
    print(table)
    if pq_status != "supported":
        print("\nblindjoin Parquet input: %s" % pq_status)

    doc = {
        "meta": meta,
        "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": {
            "cpu_model": _cpu_model(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_at_report": [round(x, 2) for x in os.getloadavg()],
        },
        "summary": summary,
        "table_markdown": table,
        "runs": runs,
    }
    if a.json:
        with open(a.json, "w") as f:
            f.write(json.dumps(doc, indent=2) + "\n")
    return 0


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("parse-size")
    p.add_argument("token")
    sub.add_parser("port")
    p = sub.add_parser("pick-column")
    p.add_argument("file")
    p = sub.add_parser("to-parquet")
    p.add_argument("src")
    p.add_argument("dst")

    p = sub.add_parser("record-blindjoin")
    p.add_argument("--runs", required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--rep", type=int, required=True)
    p.add_argument("--format", choices=["csv", "parquet"], required=True)
    p.add_argument("--input-bytes", type=int, required=True)
    p.add_argument("--wall", type=float, required=True)
    p.add_argument("--r-json", required=True)
    p.add_argument("--s-json", required=True)
    p.add_argument("--r-time")
    p.add_argument("--s-time")

    p = sub.add_parser("record-duckdb")
    p.add_argument("--runs", required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--rep", type=int, required=True)
    p.add_argument("--result", required=True)

    p = sub.add_parser("compare")
    p.add_argument("--column", required=True)
    p.add_argument("files", nargs="+")

    p = sub.add_parser("check-counts")
    p.add_argument("--runs", required=True)
    p.add_argument("--size", type=int, required=True)

    p = sub.add_parser("write-meta")
    p.add_argument("--out", required=True)
    p.add_argument("pairs", nargs="*")

    p = sub.add_parser("report")
    p.add_argument("--runs", required=True)
    p.add_argument("--meta")
    p.add_argument("--json")

    a = ap.parse_args(argv)
    if a.cmd == "parse-size":
        try:
            print(parse_size(a.token))
        except ValueError as e:
            raise SystemExit("bad size %r: %s" % (a.token, e))
    elif a.cmd == "port":
        print(free_port())
    elif a.cmd == "pick-column":
        print(pick_column(a.file))
    elif a.cmd == "to-parquet":
        to_parquet(a.src, a.dst)
    elif a.cmd == "record-blindjoin":
        record_blindjoin(a)
    elif a.cmd == "record-duckdb":
        record_duckdb(a)
    elif a.cmd == "compare":
        return compare(a)
    elif a.cmd == "check-counts":
        return check_counts(a)
    elif a.cmd == "write-meta":
        write_meta(a)
    elif a.cmd == "report":
        return report(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
