#!/usr/bin/env python3
"""Plaintext baseline: the semi-join of two files in DuckDB, timed end to end.

What a database does when both tables are in one place:

    COPY (
      SELECT a.* FROM <A> AS a
      WHERE key(a.col) IN (SELECT key(b.col) FROM <B> AS b WHERE key(b.col) <> '')
    ) TO '<OUT>' (FORMAT csv, HEADER true)        -- FORMAT parquet for *.parquet

that is, the rows of A whose normalised key is among B's normalised keys, an
empty key never matching (a NULL key, which is how DuckDB reads an empty CSV
field, never matches either). <A> and <B> are read_csv(..., all_varchar=true)
or, for *.parquet inputs, read_parquet(...) with every column cast to VARCHAR.

key(col) is, by default (--trim whitespace),

    lower(regexp_replace(col, '^[\\s\\v\\x{85}\\pZ]+|[\\s\\v\\x{85}\\pZ]+$', '', 'g'))

which removes leading and trailing Unicode whitespace (the White_Space
property) and lower-cases: the same key as `blindjoin --normalize email` for
keys that are already in NFC (--nfc adds DuckDB's nfc_normalize before and after
lower-casing, as blindjoin does). DuckDB's one-argument trim(col) removes
spaces only, not tabs; `--trim spaces` uses lower(trim(col)) to show what that
misses. The regular expression is also faster than trim(col, '<whitespace
characters>'), whose cost grows with the number of characters listed.

Each repetition opens a fresh in-memory connection (nothing cached between
repetitions), sets `threads`, runs the one COPY statement and closes the
connection; the wall time of all of that (time.perf_counter) is recorded.
The median over --reps is reported with the matched row count.

JSON (one object) goes to stdout and, with --json FILE, to FILE; one
human-readable line goes to stderr.

Run it through run-duckdb.sh, which makes the venv and pins the version.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

EXPECTED_VERSION = "2.0.0"

# Unicode White_Space = \s (\t \n \f \r space) + \v + U+0085 + category Z.
WS_CLASS = r"[\s\v\x{85}\pZ]"


def sql_str(text):
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def sql_ident(name):
    """A SQL identifier (quoted)."""
    return '"' + name.replace('"', '""') + '"'


def is_parquet(path):
    return path.lower().endswith(".parquet")


def source_sql(path):
    """A table expression reading `path` with every column as VARCHAR."""
    if is_parquet(path):
        return "(SELECT COLUMNS(*)::VARCHAR FROM read_parquet(%s))" % sql_str(path)
    return ("read_csv(%s, header = true, all_varchar = true, delim = ',', "
            "quote = '\"', escape = '\"')" % sql_str(path))


def key_sql(col_expr, trim="whitespace", nfc=False):
    """The normalised key of a VARCHAR expression."""
    if trim == "whitespace":
        pattern = "^%s+|%s+$" % (WS_CLASS, WS_CLASS)
        inner = "regexp_replace(%s, %s, '', 'g')" % (col_expr, sql_str(pattern))
    elif trim == "spaces":
        inner = "trim(%s)" % col_expr
    else:
        raise ValueError("unknown trim mode %r" % trim)
    if nfc:
        return "nfc_normalize(lower(nfc_normalize(%s)))" % inner
    return "lower(%s)" % inner


def join_sql(a_path, b_path, column, out_path, trim="whitespace", nfc=False):
    col = sql_ident(column)
    ka = key_sql("a." + col, trim, nfc)
    kb = key_sql("b." + col, trim, nfc)
    fmt = "FORMAT parquet" if is_parquet(out_path) else "FORMAT csv, HEADER true"
    return (
        "COPY (\n"
        "  SELECT a.* FROM %s AS a\n"
        "  WHERE %s IN (SELECT %s FROM %s AS b WHERE %s <> '')\n"
        ") TO %s (%s)"
        % (source_sql(a_path), ka, kb, source_sql(b_path), kb, sql_str(out_path), fmt))


def run_once(duckdb, sql, threads):
    """One repetition in a fresh connection. Returns (wall seconds, rows written)."""
    t0 = time.perf_counter()
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET threads = %d" % threads)
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    t1 = time.perf_counter()
    return t1 - t0, (int(row[0]) if row else None)


def preflight(duckdb, threads, paths, column):
    """Check that the thread count is taken and that every input has the column.

    Returns (threads setting, None) or (None, error message).
    """
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET threads = %d" % threads)
        setting = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
        for p in paths:
            cols = [d[0] for d in con.execute("SELECT * FROM %s LIMIT 0" % source_sql(p)).description]
            if column not in cols:
                return None, "%s has no column %r (columns: %s)" % (p, column, ", ".join(cols))
        return setting, None
    except duckdb.Error as e:
        return None, "duckdb cannot read the inputs: %s" % e
    finally:
        con.close()


def cpu_model():
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
    ap.add_argument("a", metavar="A", help="the file whose matched rows are written (CSV or .parquet)")
    ap.add_argument("b", metavar="B", help="the file whose keys are looked up (CSV or .parquet)")
    ap.add_argument("--column", "-c", required=True, help="the key column (in both files)")
    ap.add_argument("--threads", type=int, default=1, help="DuckDB threads (default 1)")
    ap.add_argument("--out", "-o", required=True,
                    help="matched rows of A: CSV with header, or Parquet if it ends in .parquet")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions, each in a fresh connection; the median is reported (default 3)")
    ap.add_argument("--trim", choices=["whitespace", "spaces"], default="whitespace",
                    help="whitespace: strip leading/trailing Unicode whitespace (as blindjoin); "
                         "spaces: DuckDB's trim(col), spaces only (default whitespace)")
    ap.add_argument("--nfc", action="store_true",
                    help="also NFC-normalise before and after lower-casing (blindjoin's email/lower)")
    ap.add_argument("--json", metavar="FILE", help="also write the JSON object to FILE")
    ap.add_argument("--allow-other-version", action="store_true",
                    help="run even if duckdb is not version %s" % EXPECTED_VERSION)
    args = ap.parse_args(argv)
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    for p in (args.a, args.b):
        if not os.path.isfile(p):
            ap.error("no such file: %s" % p)

    try:
        import duckdb
    except ImportError as e:
        print("cannot import duckdb: %s\nrun bench/peers/run-duckdb.sh, which installs it" % e,
              file=sys.stderr)
        return 2
    version = getattr(duckdb, "__version__", "unknown")
    if version != EXPECTED_VERSION and not args.allow_other_version:
        print("duckdb version is %s, expected %s (use --allow-other-version)"
              % (version, EXPECTED_VERSION), file=sys.stderr)
        return 2

    threads_set, err = preflight(duckdb, args.threads, (args.a, args.b), args.column)
    if err:
        print(err, file=sys.stderr)
        return 1
    sql = join_sql(args.a, args.b, args.column, args.out, args.trim, args.nfc)
    load_before = os.getloadavg()
    walls = []
    rows = []
    for _ in range(args.reps):
        try:
            wall, n = run_once(duckdb, sql, args.threads)
        except duckdb.Error as e:
            print("duckdb failed: %s\nstatement:\n%s" % (e, sql), file=sys.stderr)
            return 1
        walls.append(wall)
        rows.append(n)
    load_after = os.getloadavg()
    if len(set(rows)) != 1:
        print("matched row count differs between repetitions: %s" % rows, file=sys.stderr)
        return 1

    res = {
        "engine": "duckdb",
        "duckdb_version": version,
        "a": args.a,
        "b": args.b,
        "a_bytes": os.path.getsize(args.a),
        "b_bytes": os.path.getsize(args.b),
        "format": "parquet" if is_parquet(args.a) else "csv",
        "column": args.column,
        "trim": args.trim,
        "nfc": args.nfc,
        "out": args.out,
        "threads": args.threads,
        "threads_setting": threads_set,
        "reps": args.reps,
        "wall_s_median": statistics.median(walls),
        "wall_s_all": walls,
        "matched_rows": rows[0],
        "sql": sql,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "host": {
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    }
    print("duckdb %s %s threads=%d reps=%d: wall %.3f s, %d rows of %s matched, load %.2f->%.2f"
          % (version, res["format"], args.threads, args.reps, res["wall_s_median"],
             res["matched_rows"], args.a, load_before[0], load_after[0]),
          file=sys.stderr)
    doc = json.dumps(res, indent=2)
    print(doc)
    if args.json:
        with open(args.json, "w") as f:
            f.write(doc + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
