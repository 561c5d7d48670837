"""A Spark driver for the exactly-once kill test: a file-source stream into the rocketmq sink
with ``deliveryGuarantee=exactly-once``, ``AvailableNow``, one file per micro-batch.

Usage: ``python eos_driver.py NAMESRV TOPIC SOURCE_DIR CHECKPOINT TRANSACTION_LOG [MASTER]``
(default master ``local[2]``; ``local[2,4]`` retries a failed task up to 3 times); prints the
query id and exits 0 once the query has read every file. The tests SIGKILL it mid-commit, or
its Python workers mid-write.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import rocketpipe.spark


def main() -> None:
    ns, topic, src, ckpt, txlog = sys.argv[1:6]
    master = sys.argv[6] if len(sys.argv) > 6 else "local[2]"
    spark = (
        SparkSession.builder.master(master)
        .appName("rocketpipe-eos-kill")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rocketpipe.spark.register(spark)
    df = spark.readStream.schema("n long").option("maxFilesPerTrigger", 1).json(src)
    q = (
        df.selectExpr("CAST(n AS STRING) AS body")
        .writeStream.format("rocketmq")
        .option("nameServer", ns)
        .option("topic", topic)
        .option("deliveryGuarantee", "exactly-once")
        .option("transactionLogDir", txlog)
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    print(f"query {q.id}", flush=True)
    q.awaitTermination()
    if q.exception() is not None:
        raise SystemExit(f"query failed: {q.exception()}")
    spark.stop()


if __name__ == "__main__":
    main()
