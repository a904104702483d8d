"""The Spark work of a ``blindjoin.spark`` run without its protocol: the floor under
``spark_vs_cli.py``'s Spark time on the same files.

    python spark_floor.py --bin target/release/blindjoin a.csv b.csv [--reps 3]
        [--buckets 16] [--lanes 2]

Each party, on a ``local[2]`` Spark of its own (the sender in a child process, both at once as
in ``spark_vs_cli.py``), does what ``blindjoin.spark`` does around the protocol:

- reads its CSV file (``spark.read.csv(header=True)``), hashes every key with the package's
  Arrow UDF (``--normalize email``, the same native hashing and bucket assignment), drops the
  rows without a key and repartitions the rows into the lanes' partitions;
- runs one barrier stage of K tasks, each taking its lane's rows into Python as the lane task
  does; instead of running the buckets' sessions, a receiver's task keeps the distinct keys of
  about a quarter of its rows (those whose item starts with a byte below 0x40: the share of the
  intersection in ``blindjoin gen``'s files);
- the receiver then finds its rows by the same left semi-join on those keys and materialises
  them (``localCheckpoint``).

Each repetition first times the command's bucketed run on the same files (as
``spark_vs_cli.py`` does), then the floor. Prints each run and the medians over the runs after
the first (the first pays the Spark sessions' warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_vs_cli import MARK, cli_run, read, sender_line, spark_session  # noqa: E402


def floor(spark: Any, path: str, receiver: bool, buckets: int, lanes: int) -> float:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F
    from pyspark.sql.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

    from blindjoin import spark as bs

    t = time.monotonic()
    df = read(spark, path)
    options = {"normalize": "email", "country_code": None, "threads": 2}
    f = bs._keys_function(options, os.urandom(16), buckets, None, None)
    keys_type = StructType(
        [StructField(bs._ITEM, BinaryType()), StructField(bs._BUCKET, IntegerType())]
    )
    udf = arrow_udf(f, keys_type, ArrowUDFType.SCALAR).asNondeterministic()
    keyed = (
        df.select(F.col("email"), udf(F.struct(F.col("email"))).alias(bs._KEYS))
        .where(F.col(bs._KEYS)[bs._ITEM].isNotNull())
        .select(
            F.col("email"),
            F.col(bs._KEYS)[bs._ITEM].alias(bs._ITEM_COLUMN),
            F.col(bs._KEYS)[bs._BUCKET].alias(bs._BUCKET_COLUMN),
        )
    )
    staged = keyed.repartition(lanes, F.pmod(F.col(bs._BUCKET_COLUMN), F.lit(lanes)))

    def task(batches: Any) -> Any:
        got = list(batches)
        table = pa.Table.from_batches(got) if got else None
        if table is None or table.num_rows == 0:
            return
        bs._item_batch(table)
        if not receiver:
            return
        items = table.column(bs._ITEM_COLUMN).combine_chunks()
        quarter = pc.less(pc.binary_slice(items, 0, 1), pa.scalar(b"\x40"))
        found = table.filter(quarter).select(["email"]).group_by(["email"]).aggregate([])
        yield from found.rename_columns(["k0"]).to_batches()

    if receiver:
        schema = StructType([StructField("k0", StringType())])
        found = staged.mapInArrow(task, schema, barrier=True).localCheckpoint(eager=True)
        # As blindjoin.spark decides: a broadcast join when the keys found are few.
        right = F.broadcast(found) if found.count() <= bs._BROADCAST else found
        matched = df.join(right, df["email"] == right["k0"], "left_semi")
        matched.localCheckpoint(eager=True)
    else:
        staged.mapInArrow(task, "k0 string", barrier=True).collect()
    return time.monotonic() - t


def serve_sender(buckets: int, lanes: int) -> None:
    spark = spark_session("blindjoin-floor-sender")
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        seconds = floor(spark, cmd["data"], False, buckets, lanes)
        print(MARK + json.dumps({"seconds": seconds}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=16)
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("--serve-sender", action="store_true")
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    args = ap.parse_args()
    if args.serve_sender:
        serve_sender(args.buckets, args.lanes)
        return
    sender = subprocess.Popen(
        [sys.executable, __file__, "--serve-sender", "--buckets", str(args.buckets),
         "--lanes", str(args.lanes)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    spark = spark_session("blindjoin-floor-receiver")
    assert sender_line(sender) == {"ready": True}
    times, cli_times = [], []
    out = os.path.abspath("spark_floor.out.csv")
    for rep in range(args.reps):
        cli = cli_run(args.bin, args.a, args.b, out, args.buckets, args.lanes)
        assert sender.stdin is not None
        sender.stdin.write(json.dumps({"data": os.path.abspath(args.b)}) + "\n")
        sender.stdin.flush()
        seconds = floor(spark, os.path.abspath(args.a), True, args.buckets, args.lanes)
        sent = sender_line(sender)
        times.append(seconds)
        cli_times.append(cli)
        print(f"run {rep + 1}: command {cli:.2f} s, floor: receiver {seconds:.2f} s, sender "
              f"{sent['seconds']:.2f} s ({seconds / cli:.2f}x)", flush=True)
    warm, warm_cli = times[1:] or times, cli_times[1:] or cli_times
    floor_s, cli_s = statistics.median(warm), statistics.median(warm_cli)
    print(f"median after the first run: command {cli_s:.2f} s, floor {floor_s:.2f} s "
          f"({floor_s / cli_s:.2f}x)")
    sender.stdin.close()
    sender.wait()


if __name__ == "__main__":
    main()
