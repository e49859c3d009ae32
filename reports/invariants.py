"""The invariants of the catalogue as Spark joins of what was observed with what the model expects.

Every function here compares; none decides what is due: windows, levels, topics, final states come
from the expected table (``reports.model``). Each invariant yields violation rows of one shape
(:data:`VIOLATION_COLUMNS`) and a count of what it checked per run; messages that cannot be
judged yet (their window still open when the run ended) are *pending* rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: (name, Spark SQL type) of every violation row, in order.
VIOLATION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("invariant", "string"),
    ("key", "string"),
    ("group", "string"),
    ("attempt", "bigint"),
    ("requested_level", "bigint"),
    ("level", "bigint"),
    ("clamped", "boolean"),
    ("anchor_ms", "bigint"),
    ("earliest_ms", "bigint"),
    ("latest_ms", "bigint"),
    ("observed_ms", "bigint"),
    ("widened_by", "string"),
    ("other_key", "string"),
    ("detail", "string"),
)


@dataclass
class Judgement:
    violations: DataFrame  # VIOLATION_COLUMNS
    checked: DataFrame  # run_id, invariant, checked
    pending: DataFrame  # run_id, invariant, key, attempt, latest_ms, detail
    stats: DataFrame  # run_id, messages, attempts, recovered
    duplicate_candidates: DataFrame  # deliveries of attempts delivered more than once
    timing: DataFrame  # observed attempts with their window: observed_ms, lo_ms, hi_ms, anchor_ms, level, delay_ms
    deliveries: DataFrame


def violation(df: DataFrame, invariant: str, **cols: Column) -> DataFrame:
    """``df`` projected onto the violation shape; columns not given are null."""
    out = []
    for name, sql_type in VIOLATION_COLUMNS:
        if name == "invariant":
            out.append(F.lit(invariant).alias(name))
        elif name in cols:
            out.append(cols[name].cast(sql_type).alias(name))
        elif name in ("run_id", "key") or (name in ("group", "requested_level", "level", "clamped") and name in df.columns):
            out.append(F.col(name).cast(sql_type).alias(name))
        else:
            out.append(F.lit(None).cast(sql_type).alias(name))
    return df.select(*out)


def _checked(df: DataFrame, invariant: str) -> DataFrame:
    return df.groupBy("run_id").agg(F.count(F.lit(1)).alias("checked")).select("run_id", F.lit(invariant).alias("invariant"), "checked")


def stored_copy() -> Column:
    """The identity of a stored copy: its commit-log offset, else its queue position."""
    return F.coalesce(
        F.concat(F.lit("commitlog@"), F.col("commit_log_offset").cast("string")),
        F.concat_ws("/", F.coalesce(F.col("queue_topic"), F.col("topic")), F.col("queue_id").cast("string"), F.col("queue_offset").cast("string")),
    )


def judge(events: DataFrame, expected: DataFrame, run_ends: DataFrame) -> Judgement:
    """``events``: contract-valid events with run_id; ``expected``: ExpectedAttempt rows;
    ``run_ends``: run_id, ended_ms. Attempts are per (key, consumer group, reconsume_times)."""
    sends = events.filter(F.col("type") == "send").select(
        "run_id", "key", F.col("topic").alias("send_topic"), "status", F.col("ts_ms").alias("send_ts_ms"),
        F.col("born_ms").alias("send_born_ms"), F.col("body_crc").alias("send_body_crc"),
    )
    deliveries = events.filter(F.col("type") == "deliver").select(
        "run_id", "key", "group", F.col("reconsume_times").alias("attempt"), "ts_ms", "store_ms", "outcome", "topic",
        "queue_topic", "queue_id", "queue_offset", "commit_log_offset", "body_crc", "msg_id", "born_ms",
        stored_copy().alias("copy"),
    )
    dlqs = events.filter(F.col("type") == "dlq").groupBy("run_id", "key", "group").agg(
        F.count(F.lit(1)).alias("dlq_count"), F.min("ts_ms").alias("dlq_ts_ms")
    )
    later = F.when(F.col("outcome") == "LATER", F.col("ts_ms"))
    attempts = deliveries.groupBy("run_id", "key", "group", "attempt").agg(
        F.count(F.lit(1)).alias("deliveries"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.min_by("store_ms", "ts_ms").alias("first_store_ms"),
        F.min_by("copy", "ts_ms").alias("first_copy"),
        F.min(later).alias("later_ts_ms"),
        F.min_by("copy", later).alias("later_copy"),
        F.max((F.col("outcome") == "OK").cast("int")).alias("answered_ok"),
    )
    prev = attempts.select("run_id", "key", "group", (F.col("attempt") + 1).alias("attempt"),
                           F.col("later_ts_ms").alias("prev_later_ts_ms"), F.col("later_copy").alias("prev_later_copy"),
                           F.lit(True).alias("prev_seen"))
    attempts = attempts.join(prev, ["run_id", "key", "group", "attempt"], "left").persist()
    exp = expected.withColumnRenamed("topic", "expected_topic").withColumn("group", F.coalesce("group", F.lit("")))
    observed = attempts.join(exp, ["run_id", "key", "group", "attempt"], "left")

    parts = [
        _timing(observed),
        _retry_schedule(observed),
        _integrity(deliveries, sends, exp),
        _level_order(observed, sends),
    ]
    loss, loss_checked, pending = _loss_and_dlq(attempts, exp, dlqs, run_ends)
    parts.append((loss, loss_checked))
    violations, checked = parts[0]
    for v, c in parts[1:]:
        violations = violations.unionByName(v)
        checked = checked.unionByName(c)
    dup_keys = attempts.filter(F.col("deliveries") > 1).select("run_id", "key", "group", "attempt")
    checked = checked.unionByName(_checked(attempts, "NO_DUPLICATE"))
    candidates = deliveries.join(dup_keys, ["run_id", "key", "group", "attempt"])
    stats = _stats(sends, attempts, deliveries)
    return Judgement(violations, checked, pending, stats, candidates, _observed_timing(observed), deliveries)


def _observed_timing(observed: DataFrame) -> DataFrame:
    """Observed attempts with the time they are judged by and their window: a retry re-consumed
    locally (the same stored copy as its LATER) by its delivery ts_ms against the local window,
    any other attempt by the store_ms of its first delivery."""
    local = (F.col("attempt") >= 1) & (F.col("first_copy") == F.col("prev_later_copy"))
    local = F.coalesce(local, F.lit(False))
    return observed.select(
        "*",
        F.when(local, F.col("first_ts_ms")).otherwise(F.col("first_store_ms")).alias("observed_ms"),
        F.when(local, F.col("local_earliest_ms")).otherwise(F.col("earliest_ms")).alias("lo_ms"),
        F.when(local, F.col("local_latest_ms")).otherwise(F.col("latest_ms")).alias("hi_ms"),
        local.alias("local"),
    )


def _timing(observed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """NOT_EARLY and ON_TIME: the observed time against the model's window."""
    o = _observed_timing(observed)
    timing = dict(
        attempt=F.col("attempt"), level=F.col("level"), clamped=F.col("clamped"), anchor_ms=F.col("anchor_ms"),
        earliest_ms=F.col("lo_ms"), latest_ms=F.col("hi_ms"), observed_ms=F.col("observed_ms"), widened_by=F.col("widened_by"),
    )
    how = F.when(F.col("local"), F.lit(" (a local re-consume of the same stored copy: judged by delivery time)")).otherwise(F.lit(""))
    early_judged = o.filter(F.col("lo_ms").isNotNull())
    late_judged = o.filter(F.col("hi_ms").isNotNull())
    early = violation(early_judged.filter(F.col("observed_ms") < F.col("lo_ms")), "NOT_EARLY",
                      detail=F.concat(F.lit("arrived before its window opened"), how), **timing)
    late = violation(late_judged.filter(F.col("observed_ms") > F.col("hi_ms")), "ON_TIME",
                     detail=F.concat(F.lit("arrived after its window closed"), how), **timing)
    return early.unionByName(late), _checked(early_judged, "NOT_EARLY").unionByName(_checked(late_judged, "ON_TIME"))


def _retry_schedule(observed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """RETRY_SCHEDULE: attempt k follows a LATER of attempt k-1; no attempt the plan does not lead to."""
    retries = observed.filter(F.col("attempt") >= 1)
    detail = (
        F.when(F.col("prev_seen").isNull(), F.concat(F.lit("attempt "), (F.col("attempt") - 1).cast("string"), F.lit(" was never delivered: a gap in reconsume_times")))
        .when(F.col("prev_later_ts_ms").isNull(), F.concat(F.lit("attempt "), (F.col("attempt") - 1).cast("string"), F.lit(" was never answered LATER")))
        .when(F.col("prev_later_ts_ms") > F.col("first_ts_ms"), F.lit("delivered before the LATER it should follow"))
        .when(F.col("final_state").isNull(), F.lit("the plan does not lead to this attempt"))
    )
    bad = retries.withColumn("detail", detail).filter(F.col("detail").isNotNull())
    v = violation(bad, "RETRY_SCHEDULE", attempt=F.col("attempt"), anchor_ms=F.col("prev_later_ts_ms"),
                  observed_ms=F.col("first_ts_ms"), detail=F.col("detail"))
    return v, _checked(retries, "RETRY_SCHEDULE")


def _integrity(deliveries: DataFrame, sends: DataFrame, exp: DataFrame) -> tuple[DataFrame, DataFrame]:
    """INTEGRITY: key sent (and stored), topic restored as the model expects, body as sent."""
    d = deliveries.join(sends, ["run_id", "key"], "left").join(
        exp.select("run_id", "key", "group", "attempt", "expected_topic"), ["run_id", "key", "group", "attempt"], "left")
    want_topic = F.coalesce(F.col("expected_topic"), F.col("send_topic"))
    detail = (
        F.when(F.col("status").isNull(), F.lit("delivered a key that was never sent"))
        .when(F.col("status") == "FAILED", F.lit("delivered a message whose send FAILED (certainly not stored)"))
        .when(F.col("topic") != want_topic, F.concat(F.lit("topic "), F.col("topic"), F.lit(", expected "), want_topic))
        .when(F.col("body_crc").isNotNull() & F.col("send_body_crc").isNotNull() & (F.col("body_crc") != F.col("send_body_crc")),
              F.concat(F.lit("body_crc "), F.col("body_crc").cast("string"), F.lit(", sent "), F.col("send_body_crc").cast("string")))
    )
    bad = d.withColumn("detail", detail).filter(F.col("detail").isNotNull())
    v = violation(bad, "INTEGRITY", attempt=F.col("attempt"), observed_ms=F.col("ts_ms"), detail=F.col("detail"))
    return v, _checked(d, "INTEGRITY")


def _level_order(observed: DataFrame, sends: DataFrame) -> tuple[DataFrame, DataFrame]:
    """LEVEL_ORDER: per effective level, B born after A's send returned must not be stored before A."""
    firsts = (observed.filter((F.col("attempt") == 0) & (F.col("level") > 0))
              .groupBy("run_id", "key", "level").agg(F.min("first_store_ms").alias("first_store_ms"))
              .join(sends, ["run_id", "key"]).select("run_id", "key", "level", "first_store_ms", "send_ts_ms", "send_born_ms"))
    # A stream of "A returned" (kind 1, at send_ts_ms) and "B born" (kind 0, at born_ms): B sees only
    # the A's whose send returned strictly before it was born.
    returned = firsts.select("run_id", "level", "key", F.col("send_ts_ms").alias("t"), F.lit(1).alias("kind"), "first_store_ms")
    born = firsts.select("run_id", "level", "key", F.col("send_born_ms").alias("t"), F.lit(0).alias("kind"), "first_store_ms")
    w = Window.partitionBy("run_id", "level").orderBy("t", "kind").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    a_store = F.when(F.col("kind") == 1, F.struct("first_store_ms", "key", "t"))
    stream = returned.unionByName(born).filter(F.col("t").isNotNull()).select(
        "*", F.max(a_store).over(w).alias("latest_a"), F.count(a_store).over(w).alias("a_before"))
    judged = stream.filter((F.col("kind") == 0) & (F.col("a_before") > 0))
    bad = judged.filter(F.col("latest_a.first_store_ms") > F.col("first_store_ms"))
    v = violation(bad, "LEVEL_ORDER", attempt=F.lit(0), level=F.col("level"), anchor_ms=F.col("t"),
                  observed_ms=F.col("first_store_ms"), other_key=F.col("latest_a.key"),
                  detail=F.concat(F.lit("born at "), F.col("t").cast("string"), F.lit(" after "), F.col("latest_a.key"),
                                  F.lit("'s send returned at "), F.col("latest_a.t").cast("string"), F.lit(", yet stored before it (")
                                  , F.col("latest_a.first_store_ms").cast("string"), F.lit(")")))
    return v, _checked(judged, "LEVEL_ORDER")


def _loss_and_dlq(attempts: DataFrame, exp: DataFrame, dlqs: DataFrame, run_ends: DataFrame):
    """NO_LOSS and DLQ_ROUTING per message, and the messages still pending at the run's end."""
    seen = attempts.groupBy("run_id", "key", "group").agg(
        F.max("answered_ok").alias("consumed"), F.max("attempt").alias("max_attempt_seen"),
        F.collect_set("attempt").alias("attempts_seen"))
    plan = exp.groupBy("run_id", "key", "group").agg(
        F.first("send_status").alias("send_status"), F.first("final_state").alias("final_state"),
        F.max(F.when(F.col("final"), F.col("attempt"))).alias("final_attempt"),
        F.collect_list(F.struct("attempt", "latest_ms", "earliest_ms")).alias("windows"))
    m = plan.join(seen, ["run_id", "key", "group"], "left").join(dlqs, ["run_id", "key", "group"], "full").join(F.broadcast(run_ends), "run_id")
    missing = F.filter("windows", lambda w: ~F.coalesce(F.array_contains(F.col("attempts_seen"), w["attempt"]), F.lit(False)))
    first_missing = F.array_min(missing)
    m = m.withColumn("first_missing", first_missing).withColumn(
        "reached", F.coalesce(F.col("consumed") == 1, F.lit(False)) | F.coalesce(F.col("dlq_count") > 0, F.lit(False)))
    # Pending: the first attempt not seen yet may still come (its window closes after the run's end).
    m = m.withColumn("pending", ~F.col("reached") & F.col("first_missing").isNotNull()
                     & (F.col("first_missing.latest_ms").isNull() | (F.col("first_missing.latest_ms") > F.col("ended_ms"))))
    sent_ok = m.filter(F.col("send_status") == "SEND_OK")
    lost = sent_ok.filter(~F.col("reached") & ~F.col("pending"))
    loss = violation(lost, "NO_LOSS", attempt=F.coalesce(F.col("first_missing.attempt"), F.col("max_attempt_seen")),
                     earliest_ms=F.col("first_missing.earliest_ms"), latest_ms=F.col("first_missing.latest_ms"),
                     observed_ms=F.col("ended_ms"),
                     detail=F.concat(F.lit("expected "), F.col("final_state"), F.lit(" by the run's end, found neither an OK delivery nor a DLQ entry")))
    stored = (F.col("send_status") == "SEND_OK") | ((F.col("send_status") == "UNKNOWN") & F.col("attempts_seen").isNotNull())
    dlq_judged = m.filter(((F.col("final_state") == "DLQ") & stored) | F.col("dlq_count").isNotNull())
    dlq_detail = (
        F.when(F.col("final_state").isNull(), F.lit("in the DLQ, but the key was never sent"))
        .when((F.col("final_state") != "DLQ") & (F.col("dlq_count") > 0), F.lit("in the DLQ, but its plan ends in CONSUMED"))
        .when(F.col("pending"), F.lit(None))
        .when(F.coalesce(F.col("dlq_count"), F.lit(0)) != 1,
              F.concat(F.lit("expected exactly one DLQ entry, found "), F.coalesce(F.col("dlq_count"), F.lit(0)).cast("string")))
        .when(F.col("max_attempt_seen") > F.col("final_attempt"),
              F.concat(F.lit("delivered again after its last attempt "), F.col("final_attempt").cast("string"), F.lit(": attempt "),
                       F.col("max_attempt_seen").cast("string")))
    )
    bad_dlq = dlq_judged.withColumn("detail", dlq_detail).filter(F.col("detail").isNotNull())
    dlq = violation(bad_dlq, "DLQ_ROUTING", attempt=F.col("final_attempt"), observed_ms=F.col("dlq_ts_ms"), detail=F.col("detail"))
    pend = m.filter(F.col("pending") & F.col("send_status").isin("SEND_OK", "UNKNOWN")).select(
        "run_id", F.when(F.col("final_state") == "DLQ", F.lit("DLQ_ROUTING")).otherwise(F.lit("NO_LOSS")).alias("invariant"), "key",
        F.col("first_missing.attempt").alias("attempt"), F.col("first_missing.latest_ms").alias("latest_ms"),
        F.when(F.col("first_missing.latest_ms").isNull(), F.lit("its window has no end: the broker was not ready again"))
        .otherwise(F.concat(F.lit("its window closes at "), F.col("first_missing.latest_ms").cast("string"),
                            F.lit(", after the run ended at "), F.col("ended_ms").cast("string"))).alias("detail"))
    checked = _checked(sent_ok, "NO_LOSS").unionByName(_checked(dlq_judged, "DLQ_ROUTING"))
    return loss.unionByName(dlq), checked, pend


def _stats(sends: DataFrame, attempts: DataFrame, deliveries: DataFrame) -> DataFrame:
    messages = sends.groupBy("run_id").agg(F.count(F.lit(1)).alias("messages"))
    n_attempts = attempts.groupBy("run_id").agg(F.count(F.lit(1)).alias("attempts"))
    recovered = (sends.filter(F.col("status") == "UNKNOWN").join(deliveries.select("run_id", "key").distinct(), ["run_id", "key"])
                 .groupBy("run_id").agg(F.count(F.lit(1)).alias("recovered")))
    return messages.join(n_attempts, "run_id", "full").join(recovered, "run_id", "left")
