"""QUEUE_ORDER across messages: an orderly consumer consumes a queue in offset order, one message at
a time (reference.orderly: ConsumeMessageOrderlyService.ConsumeRequest.run takes the lowest offsets
of the queue's ProcessQueue, under the queue's lock, and a failing message is re-consumed before
anything behind it).

The event-at-a-time judge emits one ``qo`` row per (message, orderly group) (:func:`qo_row`): the
queue of its first stored copy, its offset there, when it was first delivered and when an answer
first ended it (``OK``, or ``LATER`` on its last allowed attempt: on its way to the DLQ). Per run,
:func:`judge_run` orders each (group, queue) by offset: a message first delivered before a message
ahead of it in the queue was ended breaks the rule. A message ahead that was never ended (lost, or
the run was interrupted) bounds nobody: NO_LOSS judges it. Redeliveries after a crash, a kill or a
rebalance start again from the committed offset, ahead of the messages judged, so they need no
excuse: only the *first* delivery of each message is compared.
"""

from __future__ import annotations

import json

import pyarrow as pa

from hourglass.reference.orderly import queue_of

NAME = "QUEUE_ORDER"
#: the kind of the rows the event-at-a-time judge emits for this module (see reports.rows)
KIND = "qo"


def qo_row(run_id: str, bucket: int, key: str, group: str, deliveries: list[dict], final_attempt: int | None,
           final_state: str | None) -> tuple | None:
    """The ``qo`` row of one (message, orderly group) from its deliveries (any order), or ``None``
    when no copy of it in its own topic was delivered. ``final_attempt``/``final_state``: the
    model's (a LATER of the final attempt ends a message bound for the DLQ)."""
    own = [d for d in deliveries if queue_of(d) is not None]
    if not own:
        return None
    first = min(own, key=lambda d: d["ts_ms"])
    ends = [d["ts_ms"] for d in deliveries if d["outcome"] == "OK" or
            (d["outcome"] == "LATER" and final_state == "DLQ" and d["reconsume_times"] == final_attempt)]
    broker, topic, queue_id = queue_of(first)
    return (run_id, bucket, KIND, key, int(first["queue_offset"]), int(first["ts_ms"]), min(ends) if ends else None, None,
            json.dumps({"group": group, "queue": [broker, topic, queue_id]}))


def judge_rows(rows: list[dict]) -> list[tuple]:
    """``v`` and ``c`` rows (:data:`reports.rows.OUTPUT_SCHEMA`, bucket -1: they span buckets) of one
    run's ``qo`` rows (as dicts)."""
    queues: dict[tuple, list[tuple]] = {}
    for r in rows:
        p = json.loads(r["payload"])
        queues.setdefault((p["group"], tuple(p["queue"])), []).append((r["level"], r["store_ms"], r["send_ts_ms"], r["key"]))
    run_id = rows[0]["run_id"] if rows else ""
    out, checked = [], 0
    for (group, queue), msgs in sorted(queues.items(), key=lambda kv: json.dumps(kv[0], default=str)):
        msgs.sort()
        ahead = None  # (ended_ms, key, offset) of the message ahead ended last
        for offset, first_ms, ended_ms, key in msgs:
            if ahead is not None:
                checked += 1
                if first_ms < ahead[0]:
                    fields = {"invariant": NAME, "key": key, "group": group, "attempt": 0, "observed_ms": first_ms,
                              "anchor_ms": ahead[0], "other_key": ahead[1],
                              "detail": (f"first delivered at {first_ms} from offset {offset} of queue {queue[2]} of "
                                         f"{queue[1]}{f' on {queue[0]}' if queue[0] else ''}, before {ahead[1]!r} (offset {ahead[2]}, ahead of it) "
                                         f"was ended at {ahead[0]}: an orderly consumer passed a message of its queue")}
                    out.append((run_id, -1, "v", key, None, None, None, None, json.dumps(fields)))
            if ended_ms is not None and (ahead is None or ended_ms > ahead[0]):
                ahead = (ended_ms, key, offset)
    out.append((run_id, -1, "c", None, None, None, None, None, json.dumps({NAME: checked})))
    return out


def judge_run(judged: pa.Table) -> pa.Table:
    """QUEUE_ORDER of one run from its ``qo`` rows among ``judged``: those become ``v`` and ``c``
    rows; the others stay."""
    import pyarrow.compute as pc

    from hourglass.reports.rows import rows_table

    is_qo = pc.equal(judged.column("kind"), KIND)
    qo = judged.filter(is_qo)
    if not qo.num_rows:
        return judged
    return pa.concat_tables([judged.filter(pc.invert(is_qo)), rows_table(judge_rows(qo.to_pylist()))])
