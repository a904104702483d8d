"""The Spark sender of the tests, in a process of its own (one SparkContext per process), and the
local Spark both parties of the tests use.

Run as a script it starts a local[2] Spark, prints a ready line, then for each JSON command read
on stdin (``{"data": parquet path, "column": ..., "options": {...}}``) runs
``blindjoin.spark.send`` and prints one JSON line: ``{"report": ...}`` or
``{"error": class name, "message": ...}``. Its lines start with ``@@`` (Spark may print too).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MARK = "@@"


def spark_session(app: str) -> Any:
    """A local Spark of two task slots that binds and talks on loopback only."""
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
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    import blindjoin
    import blindjoin.spark

    spark = spark_session("blindjoin-test-sender")
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        try:
            df = spark.read.parquet(cmd["data"])
            report = blindjoin.spark.send(df, cmd["column"], **cmd["options"])
            out: dict[str, Any] = {"report": report}
        except Exception as e:  # noqa: BLE001 - the test inspects it
            out = {
                "error": type(e).__name__,
                "message": str(e),
                "peer": isinstance(e, blindjoin.PeerError),
            }
        print(MARK + json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
