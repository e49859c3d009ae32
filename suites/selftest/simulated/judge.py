"""A small in-process judge: the invariants of DESIGN.md evaluated on one run's events against the
model's expected table (``reference.expected``). It exists so the model and the simulator can be
tested without Spark; the PySpark checker (``reports``) is the harness's real judge.

``judge(run, events)`` returns ``{invariant id: [violation sentences]}`` for every invariant.
"""

from __future__ import annotations

from collections import defaultdict

from reference.clock import on_true_clock
from reference.contract import INVARIANTS
from reference.expected import build_expected, rule_duplicate, same_stored_copy


def judge(run: dict, events: list[dict]) -> dict[str, list[str]]:
    v: dict[str, list[str]] = {i: [] for i in INVARIANTS}
    events = on_true_clock(events)  # reference.clock: store times judged as true times
    expected = build_expected(run, events)
    sends = {e["key"]: e for e in events if e["type"] == "send"}
    faults = [e for e in events if e["type"] == "fault"]
    delivers = sorted((e for e in events if e["type"] == "deliver"), key=lambda e: e["ts_ms"])
    dlq = [e for e in events if e["type"] == "dlq"]
    crashes = [e for e in delivers if e["outcome"] == "CRASH"]
    by_attempt: dict[tuple, list[dict]] = defaultdict(list)
    for d in delivers:
        by_attempt[(d["key"], d["group"], d["reconsume_times"])].append(d)
    exp = {(a.key, a.group, a.attempt): a for a in expected}
    final_attempt = {(a.key, a.group): a for a in expected if a.final}

    # INTEGRITY
    for d in delivers:
        s = sends.get(d["key"])
        if s is None:
            v["INTEGRITY"].append(f"{d['key']}: delivered but never sent")
        elif d["topic"] != s["topic"] or ("body_crc" in d and "body_crc" in s and d["body_crc"] != s["body_crc"]):
            v["INTEGRITY"].append(f"{d['key']}: delivered topic/body differ from the send")
        elif s["status"] == "FAILED":
            v["INTEGRITY"].append(f"{d['key']}: delivered although its send FAILED")

    # NOT_EARLY, ON_TIME, RETRY_SCHEDULE
    for (key, group, attempt), ds in by_attempt.items():
        first = ds[0]
        a = exp.get((key, group, attempt))
        if a is None:
            v["RETRY_SCHEDULE"].append(f"{key} attempt {attempt} (group {group}): not an attempt its plan leads to")
            continue
        if attempt > 0:
            prev = by_attempt.get((key, group, attempt - 1), [])
            laters = [p for p in prev if p["outcome"] == "LATER"]
            if not laters:
                v["RETRY_SCHEDULE"].append(f"{key} attempt {attempt}: no LATER of attempt {attempt - 1} before it")
                continue
            local = same_stored_copy(laters[0], first)
        else:
            local = False
        if local:
            t, lo, hi = first["ts_ms"], a.local_earliest_ms, a.local_latest_ms
        else:
            t, lo, hi = first["store_ms"], a.earliest_ms, a.latest_ms
        if lo is not None and t < lo:
            v["NOT_EARLY"].append(f"{key} attempt {attempt}: at {t}, due {lo} (level {a.level}, {lo - t} ms early)")
        if hi is not None and t > hi:
            v["ON_TIME"].append(f"{key} attempt {attempt}: at {t}, window closed at {hi} ({t - hi} ms late; {a.widened_by})")

    # LEVEL_ORDER: first attempts of one level, in send order
    by_level: dict[tuple, list[tuple[int, int, int, str]]] = defaultdict(list)
    for (key, group, attempt), ds in by_attempt.items():
        a = exp.get((key, group, attempt))
        if attempt == 0 and a is not None and a.level > 0:
            s = sends[key]
            by_level[(group, a.level)].append((s["ts_ms"], s.get("born_ms", s["ts_ms"]), ds[0]["store_ms"], key))
    for (group, level), rows in by_level.items():
        rows.sort()
        born_sorted = sorted(rows, key=lambda r: r[1])
        best, j = None, 0
        for ts, born, store, key in born_sorted:  # sends that returned before this one was born
            while j < len(rows) and rows[j][0] < born:
                if best is None or rows[j][2] > best[2]:
                    best = rows[j]
                j += 1
            if best is not None and best[2] > store:
                v["LEVEL_ORDER"].append(f"level {level}: {best[3]} re-put at {best[2]} after {key} at {store}")

    # NO_LOSS and DLQ_ROUTING
    dlq_keys = defaultdict(list)
    for e in dlq:
        dlq_keys[(e["key"], e["group"])].append(e)
    for (key, group), a in final_attempt.items():
        if a.send_status != "SEND_OK" or group is None:
            continue
        if a.final_state == "CONSUMED":
            if not any(d["outcome"] == "OK" for d in by_attempt.get((key, group, a.attempt), [])):
                v["NO_LOSS"].append(f"{key} (group {group}): never consumed OK at attempt {a.attempt}")
        else:
            n = len(dlq_keys.get((key, group), []))
            if n != 1:
                (v["DLQ_ROUTING"] if n else v["NO_LOSS"]).append(f"{key} (group {group}): in the DLQ {n} times, expected once")
            later = [d for d in by_attempt.get((key, group, a.attempt + 1), [])]
            if later:
                v["DLQ_ROUTING"].append(f"{key}: delivered again (attempt {a.attempt + 1}) after its last allowed failure")
    for (key, group), es in dlq_keys.items():
        a = final_attempt.get((key, group))
        if a is None or a.final_state != "DLQ":
            v["DLQ_ROUTING"].append(f"{key} (group {group}): in the DLQ but its plan ends consumed")

    # NO_DUPLICATE
    for (key, group, attempt), ds in by_attempt.items():
        for second in ds[1:]:
            ruling = rule_duplicate(run, faults + crashes, ds[0], second)
            if not ruling.allowed:
                v["NO_DUPLICATE"].append(f"{key} attempt {attempt}: {ruling.cause} duplicate: {ruling.reason}")
    return v


def violated(verdict: dict[str, list[str]]) -> dict[str, list[str]]:
    return {k: msgs for k, msgs in verdict.items() if msgs}
