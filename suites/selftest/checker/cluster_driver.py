"""``python -m suites.selftest.checker.cluster_driver [--unshipped] [--bucketed] check ...``: the
checker's command line, run as a driver of a Spark cluster by ``test_cluster.py``, with one of two
switches only a test wants: ``--unshipped`` keeps the project's code from the executors (they must
fail to import it, and say so), ``--bucketed`` sends every run down the bucketed path (files cut
into blobs by bucket of keys, the shuffle, LEVEL_ORDER across buckets), in buckets of about 10
events (a few per hand-made run: the cluster proves the path runs there; ``test_buckets.py`` cuts
finer, locally)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from hourglass.reports import check, spark, spark_jobs
    from hourglass.reports.cli import main as cli

    if "--unshipped" in argv:
        argv.remove("--unshipped")
        spark.SHIP_CODE = False
    if "--bucketed" in argv:
        argv.remove("--bucketed")
        spark_jobs.EVENTS_PER_BUCKET = 10
        check.WHOLE_RUN_MAX_EVENTS = -1
    return cli(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
