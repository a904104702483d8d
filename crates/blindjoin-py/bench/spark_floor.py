"""The Spark work of a ``blindjoin.spark`` run without its protocol: the floor under
``spark_vs_cli.py``'s Spark time on the same files.

    python spark_floor.py a.csv b.csv [--reps 3] [--buckets 16] [--lanes 2]

Each party, on a ``local[2]`` Spark of its own (the sender in a child process, both at once as
in ``spark_vs_cli.py``), does what ``blindjoin.spark`` does around the protocol:

- reads its CSV file (``spark.read.csv(header=True)``), hashes every key with the package's
  Arrow UDF (``--normalize email``, the same native hashing and bucket assignment), drops the
  rows without a key and repartitions the rows into the lanes' partitions;
- runs one barrier stage of K tasks, each taking its lane's rows into Python as the lane task
  does; instead of running the buckets' sessions, a receiver's task keeps the distinct keys of
  about half of its rows (those whose item starts with a byte below 0x80: the size of the real
  intersection of these files);
- the receiver then finds its rows by the same left semi-join on those keys and materialises
  them (``localCheckpoint``).

Prints each run's receiver time and the median.
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
from spark_vs_cli import MARK, read, sender_line, spark_session  # noqa: E402


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
        half = pc.less(pc.binary_slice(items, 0, 1), pa.scalar(b"\x80"))
        found = table.filter(half).select(["email"]).group_by(["email"]).aggregate([])
        yield from found.rename_columns(["k0"]).to_batches()

    if receiver:
        schema = StructType([StructField("k0", StringType())])
        found = staged.mapInArrow(task, schema, barrier=True).localCheckpoint(eager=True)
        matched = df.join(found, df["email"] == found["k0"], "left_semi")
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
    times = []
    for rep in range(args.reps):
        assert sender.stdin is not None
        sender.stdin.write(json.dumps({"data": os.path.abspath(args.b)}) + "\n")
        sender.stdin.flush()
        seconds = floor(spark, os.path.abspath(args.a), True, args.buckets, args.lanes)
        sent = sender_line(sender)
        times.append(seconds)
        print(f"run {rep + 1}: receiver {seconds:.2f} s, sender {sent['seconds']:.2f} s",
              flush=True)
    print(f"median: {statistics.median(times):.2f} s")
    sender.stdin.close()
    sender.wait()


if __name__ == "__main__":
    main()
