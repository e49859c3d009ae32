"""The batch summary: ``index.html`` over all runs of a system, ``summary.md`` beside it (Markdown
for a PR comment), and each scenario's own wait.

A scenario's *own wait* is how long the model says it takes when everything goes right: the last
send plus, for each message, the delay of its level and of every retry its plan asks for (and the
outages the scenario schedules; a step timed from a broker event at a pessimistic estimate of when
that event comes, :func:`fault_times_ms`). The suite's wall time is reported against the longest of these
(DESIGN.md target: at most 1.5x).
"""

from __future__ import annotations

import html
import time
from pathlib import Path

from hourglass.harness.drain import DUPLICATE_WATCH_MS
from hourglass.reference import faults as kinds
from hourglass.reference.cluster import is_broker
from hourglass.reference.faults.process import KILL, PAUSE, RESUME, START, START_PAUSED, STOP
from hourglass.reference.contract import CONSUMER_TARGET, INVARIANTS
from hourglass.reference.levels import parse_level_table
from hourglass.reference.plans import plan_outcome
from hourglass.reference.pop import POP_MODES, V1_NOTIFY_AGAIN, PopGroup, pop_wait_ms
from hourglass.reference.profile import FIRST_DELAY_MS, FIRST_FLUSH_DELAY_MS
from hourglass.reference.timer import timer_ruling
from hourglass.reference.retry import asked_retry_level, clamped_level
from hourglass.reference.timeout import effective_timeout_min, sent_back_within
from hourglass.reports.timetext import start_words, with_offsets
from hourglass.reports.verdict import BROKEN, FLAKY, PASSED, UNDECIDED, VIOLATED, shown_status, status


def message_wait_ms(scenario, m, table=None, now_ms: int | None = None, outages=None) -> int:
    """When the model says message ``m`` of ``scenario`` is done (ms after the first send): its
    send, its delay and the delay of every retry its plan asks for, what falls due while the
    broker is down taken once it is back (``outages``: the scenario's :func:`broker_outages_ms`,
    computed when None; ``()`` for the fault steps' own timing). An absolute timer time is measured from ``now_ms`` (the first
    send's time; default: the wall clock now, an estimate made before the run)."""
    table = table or parse_level_table(scenario.profile.message_delay_level)
    mrt = next((c.max_reconsume_times for c in scenario.consumers if m.topic in c.topics and c.max_reconsume_times is not None),
               scenario.profile.max_reconsume_times)
    t = m.at_ms
    if m.is_timer and m.delay_level <= 0:  # refused or past: done at once (an absolute time: from now)
        now = int(time.time() * 1000) if now_ms is None else now_ms
        p = scenario.profile
        ruling = timer_ruling(m.timer_request(now), 0, now, p.timer_precision_ms, p.timer_max_delay_sec)
        t += max(0, ruling.deliver_ms + p.timer_precision_ms - now) if ruling.accepted and ruling.timer else 0
    elif m.delay_level > 0:
        t += table.delay_ms(table.clamp(m.delay_level))
    t = _broker_back_ms(broker_outages_ms(scenario, table) if outages is None else outages, _consumers_back_ms(scenario, t))
    popping = next((c for c in scenario.consumers if m.topic in c.topics and c.mode in POP_MODES), None)
    if popping is not None:  # reference.pop: each attempt revived after its invisible time (the revive's lag left out)
        entry = popping.pop_profile(V1_NOTIFY_AGAIN)
        return t + pop_wait_ms(tuple(m.plan), PopGroup(popping.mode, V1_NOTIFY_AGAIN, entry["invisible_ms"],
                                                       entry.get("max_times", mrt)))
    out = plan_outcome(tuple(m.plan), mrt)
    timeout = effective_timeout_min(next((c.consume_timeout_min for c in scenario.consumers
                                          if m.topic in c.topics and c.consume_timeout_min is not None), None))
    for k in range(1, out.last_attempt + 1):
        t += table.delay_ms(clamped_level(asked_retry_level(k, out.asked[k - 1]), table.max_level))
        if k - 1 in out.timed_out:  # held past consumeTimeout: sent back by the clean-up within 2T
            t += sent_back_within(0, timeout)[1]
    batch = next((c for c in scenario.consumers if m.topic in c.topics and c.batch_size > 1), None)
    asked = _group_asks(scenario, batch, mrt) if batch is not None and out.last_attempt < mrt else None
    if asked is not None:
        # ConsumeMessageConcurrentlyService.processConsumeResult: a batch answered with an ack index
        # sends back every message after it, whatever its own plan says, at the level the batch's
        # failure asked for (reference.plans): a retry more, for a message whose last attempt
        # shared a batch with a failure (the estimate takes one, at the group's highest asked
        # level; a longer cascade is the drain's to wait for: it follows the events)
        level = max(asked_retry_level(out.last_attempt + 1, 0), asked)
        t += table.delay_ms(clamped_level(level, table.max_level))
    return t


def _group_asks(scenario, group, mrt: int) -> int | None:
    """The highest delay level any failure of ``group``'s messages asks for (0: the broker's
    choice), or None when none of them fails."""
    outs = [plan_outcome(tuple(m.plan), mrt) for m in scenario.messages if m.topic in group.topics]
    failing = [o for o in outs if o.last_attempt > 0]
    return max((a for o in failing for a in o.asked), default=0) if failing else None


def _consumers_back_ms(scenario, t: int) -> int:
    """When the consumers take what is due at ``t`` (ms after the first send): at ``t``, or when a
    pause of the consumers under way then ends (a paused consumer pulls nothing: ``pause`` with a
    ``duration_ms`` resumes by itself, else a ``resume`` step ends it; anchored steps left out)."""
    paused_at = None
    for f in sorted((f for f in scenario.faults if f.after is None and f.target == CONSUMER_TARGET), key=lambda f: f.at_ms):
        if f.action == PAUSE:
            if f.duration_ms and f.at_ms <= t < f.at_ms + f.duration_ms:
                return f.at_ms + f.duration_ms
            paused_at = None if f.duration_ms else f.at_ms
        elif f.action == RESUME and paused_at is not None:
            if paused_at <= t < f.at_ms:
                return f.at_ms
            paused_at = None
    return t


def scenario_wait_ms(scenario) -> int:
    """How long a run of ``scenario`` waits (ms after its first send), by the model: until its
    last message is done (:func:`message_wait_ms`) and the drain's margin after it; at least until
    each fault step has fired and ended, the broker its starts bring back is ready and has made its
    first re-put pass; and a broker killed or stopped is watched for scheduler duplicates
    ``DUPLICATE_WATCH_MS`` after its ready (``harness.drain.duplicate_watch_until_ms``)."""
    table = parse_level_table(scenario.profile.message_delay_level)
    outages = broker_outages_ms(scenario, table)
    longest = max((message_wait_ms(scenario, m, table, outages=outages) for m in scenario.messages), default=0)
    longest += scenario.drain_margin_ms
    for fired_ms, f in fault_times_ms(scenario, table):
        longest = max(longest, fired_ms + f.duration_ms + scenario.drain_margin_ms)
    for _, back_ms, restarted in outages:
        longest = max(longest, back_ms + _FIRST_PASS_MS + scenario.drain_margin_ms,
                      back_ms + DUPLICATE_WATCH_MS if restarted else 0)
    return longest


#: how long a graceful stop of a broker takes, for an estimate (its shutdown hooks: 9.8 s measured on
#: 5.5.0, process runtime); a ``restart`` starts the broker again only once its stop returned
STOP_ESTIMATE_MS = 10_000


def broker_outages_ms(scenario, table=None) -> list[tuple[int, int, bool]]:
    """Each span in which a fault step has a broker down or frozen (ms after the first send, by
    :func:`fault_times_ms`), until it is ready again (a start: :func:`start_to_ready_ms` after it,
    a quota's slowness counted; after a graceful stop no sooner than :data:`STOP_ESTIMATE_MS`; a
    resume at once, a slow start's once the start is ready), and whether a
    kill or stop began it (the run then watches for scheduler duplicates after the ready). A
    broker left down to the end is left out."""
    out: list[tuple[int, int, bool]] = []
    if not scenario.faults:
        return out
    down: dict[str, tuple[int, bool, bool]] = {}  # target -> (since, killed or stopped, gracefully)
    starting: dict[str, int] = {}  # target -> when a start_paused began its start (its resume waits for the ready)
    for fired, f in fault_times_ms(scenario, table):
        if not is_broker(f.target):
            continue
        for offset, prim, _ in kinds.step_kind(f.action).expand(f):
            t = fired + offset
            if prim in (KILL, STOP, PAUSE):  # down since the first of them (a pause, then a kill: killed)
                since, restarted, graceful = down.get(f.target, (t, False, False))
                down[f.target] = (since, restarted or prim in (KILL, STOP), graceful or prim == STOP)
            if prim == START_PAUSED:  # started and frozen at once: ready no sooner than a start's, resumed
                starting[f.target] = t
                down.setdefault(f.target, (t, False, False))
            elif prim in (START, RESUME):
                since, restarted, graceful = down.pop(f.target, (t, False, False))  # a first start: down until it
                at = max(t, since + STOP_ESTIMATE_MS) if graceful else t
                if prim == START:  # a start is ready some seconds after (under a CPU quota: many)
                    ready = at + start_to_ready_ms(f)
                elif f.target in starting:  # a slow start's resume: once the start is ready, not before
                    ready = max(at, starting.pop(f.target) + start_to_ready_ms(f))
                else:  # a resume: at once
                    ready = at
                out.append((since, ready, restarted))
    return out


def _broker_back_ms(outages, t: int) -> int:
    """When a broker takes what is due at ``t`` (ms after the first send): at ``t``, or when an
    outage of it under way then is over (:func:`broker_outages_ms`) and its first re-put pass ran."""
    for since, back, _ in outages:
        if since <= t < back:
            t = back + _FIRST_PASS_MS
    return t


_FIRST_FLUSH_MS = FIRST_FLUSH_DELAY_MS  # reference.profile: the first offset flush after a start
_FIRST_PASS_MS = FIRST_DELAY_MS  # reference.profile: the first re-put pass after a start
#: how long a start takes to ready, for an estimate (a real broker: seconds; the simulator 1.5 s)
READY_ESTIMATE_MS = 10_000
#: the CPU a broker's start takes to its ready, for an estimate under a quota (reference.faults.cpu):
#: a throttled_start at 100 thousandths of one CPU took 40-85 s to ready on 5.5.0 (process runtime)
START_CPU_MS = 4_500


def start_to_ready_ms(f) -> int:
    """How long fault step ``f``'s start takes to its ready, for an estimate: :data:`READY_ESTIMATE_MS`,
    or the start's CPU (:data:`START_CPU_MS`) at ``f.cpu_permille`` of one CPU when it starts the
    broker under a quota (``throttled_start``), whichever is longer."""
    permille = getattr(f, "cpu_permille", 0) or 0
    return max(READY_ESTIMATE_MS, START_CPU_MS * 1000 // permille) if permille else READY_ESTIMATE_MS
#: the steps that start a target when they fire (reference.faults)
_STARTS = tuple(k.action for k in kinds.steps() if {START, START_PAUSED} & set(kinds.expansion(k.action)))


def fault_times_ms(scenario, table=None) -> list[tuple[int, object]]:
    """When each fault step fires (ms after the first send), a pessimistic estimate for anchored
    steps: the count-th flush comes ``interval`` apart (10 s after a start), the count-th re-put of a
    level when its count-th message due after the previous step is due, a ready
    :data:`READY_ESTIMATE_MS` after the start that precedes it, ``previous`` at once."""
    table = table or parse_level_table(scenario.profile.message_delay_level)
    interval = scenario.profile.flush_delay_offset_interval_ms
    out: list[tuple[int, object]] = []
    prev_ms, ready_ms, start_ms = 0, 0, READY_ESTIMATE_MS
    for f in scenario.faults:
        a = f.after
        if a is None:
            fired = f.at_ms
        else:
            if a.event == "flush":
                anchor = prev_ms + (a.count - 1) * interval + max(interval, _FIRST_FLUSH_MS - (prev_ms - ready_ms))
            elif a.event == "timer_flush":
                anchor = prev_ms + a.count * scenario.profile.timer_flush_interval_ms
            elif a.event == "timer":
                due = sorted(message_wait_ms(scenario, m, table, outages=()) for m in scenario.messages
                         if m.is_timer and m.delay_level <= 0)
                later = [t for t in due if t >= prev_ms]
                anchor = max(prev_ms + _FIRST_PASS_MS, later[a.count - 1] if len(later) >= a.count else prev_ms)
            elif a.event == "ready":
                anchor = prev_ms + start_ms * a.count
            elif a.event == "reput":
                due = sorted(m.at_ms + table.delay_ms(table.clamp(m.delay_level)) for m in scenario.messages
                             if m.delay_level > 0 and (a.level == 0 or table.clamp(m.delay_level) == a.level))
                later = [t for t in due if t >= prev_ms]
                anchor = max(prev_ms + _FIRST_PASS_MS, later[a.count - 1] if len(later) >= a.count else prev_ms)
            else:  # previous
                anchor = prev_ms
            fired = anchor + f.at_ms
        out.append((fired, f))
        prev_ms = fired
        if f.action in _STARTS and is_broker(f.target):
            start_ms = start_to_ready_ms(f)
            ready_ms = fired + f.duration_ms + start_ms
    return out


def _cell(inv: dict) -> str:
    p = inv.get("passed")
    cls, text = {True: ("pass", "pass"), False: ("fail", "FAIL"), None: ("na", "—")}[p]
    if p is False:
        text += f" {inv.get('violations')}/{inv.get('checked')}"
        if inv.get("accepted"):
            text += f" ({inv['accepted']} accepted)"
    return f'<td class="{cls}">{html.escape(text)}</td>'


def split_skipped(verdicts: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the verdicts of the runs that ran, the scenarios the system could not run): a skipped
    scenario is no verdict on the broker, and no pass either — every summary counts and lists it
    with its reason (:func:`harness.runner.skip_reason`), so a night that skipped a fault family
    does not read as all green."""
    return [v for v in verdicts if not v.get("skipped")], [v for v in verdicts if v.get("skipped")]


def _skipped_html(skipped: list[dict]) -> str:
    if not skipped:
        return ""
    items = "".join(f"<li><b>{html.escape(v.get('scenario') or v.get('run_id', '?'))}</b>: {html.escape(str(v['skipped']))}</li>"
                    for v in skipped)
    return f'<h2 id="skipped">{len(skipped)} skipped (not run: no verdict on the broker)</h2><ul class="skipped">{items}</ul>'


def write_index(out_dir: Path, system: str, verdicts: list[dict], wall_s: float, longest_wait_s: float) -> Path:
    from hourglass.reports.version import hourglass_version

    verdicts, skipped = split_skipped(verdicts)
    rows = []
    for v in verdicts:
        rep = v.get("report")
        link = f'<a href="{html.escape(str(Path(rep).relative_to(out_dir)))}">{html.escape(v.get("run_id", "?"))}</a>' if rep and Path(rep).is_relative_to(out_dir) else html.escape(v.get("run_id", "?"))
        state = "FAIL" if status(v) == VIOLATED else shown_status(v)
        cells = "".join(_cell(v.get("invariants", {}).get(n, {})) for n in INVARIANTS)
        why = v.get("broken") or v.get("interrupted")
        err = f'<div class="err">{html.escape(why)}</div>' if why else ""
        rows.append(f"<tr><td>{link}{err}</td><td>{state}</td><td>{v.get('messages', '')}</td>{cells}</tr>")
    ratio = f"{wall_s / longest_wait_s:.2f}x" if longest_wait_s else "n/a"
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Hourglass: {html.escape(system)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;font-size:13px}}
.pass{{background:#dfd}}.fail{{background:#fbb}}.na{{color:#999}}.err{{color:#a00;font-size:11px;max-width:40em}}</style></head><body>
<h1>Hourglass — {html.escape(system)}</h1>
<p>{len(verdicts)} runs{f", {len(skipped)} skipped" if skipped else ""}; suite wall time {wall_s:.0f} s; longest scenario's own wait {longest_wait_s:.0f} s (ratio {ratio}). Hourglass {html.escape(hourglass_version())}.</p>
<table><tr><th>run</th><th>verdict</th><th>messages</th>{''.join(f'<th>{n}</th>' for n in INVARIANTS)}</tr>
{''.join(rows)}</table>{_skipped_html(skipped)}</body></html>"""
    path = out_dir / "index.html"
    path.write_text(page)
    return path


SUMMARY_MD = "summary.md"
_MARK = {PASSED: "✅", FLAKY: "🔁", VIOLATED: "❌", UNDECIDED: "⏳", BROKEN: "⚠️"}
_SKIPPED_MARK = "⏭️"


def _md(text) -> str:
    """One table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def failures(verdict: dict) -> list[tuple[str, str]]:
    """(invariant, its first explanation) for each invariant the run failed, in the contract's order."""
    out = []
    for name in INVARIANTS:
        inv = verdict.get("invariants", {}).get(name) or {}
        if inv.get("passed") is False:
            examples = inv.get("examples") or []
            first = with_offsets(examples[0].get("explanation", ""), verdict.get("started_ms")) if examples else ""
            gating = int(inv.get("violations") or 0) - int(inv.get("accepted") or 0)
            count = f"{inv.get('violations')}/{inv.get('checked')}" + (f", {inv['accepted']} accepted" if inv.get("accepted") else "")
            out.append((f"{name} ({count})" + ("" if gating > 0 else " accepted by the baseline"), first))
    return out


def batch_seconds(wall_s: float, check_s: float | None) -> str:
    """How long a batch took, its check included ("75 s (running 1 s, checking 74 s)"): on the
    simulator the runs take no time at all, the check most of it."""
    if check_s is None:
        return f"{wall_s:.0f} s"
    return f"{wall_s + check_s:.0f} s (running {wall_s:.0f} s, checking {check_s:.0f} s)"


def markdown_summary(system: str, verdicts: list[dict], wall_s: float, check_s: float | None = None) -> str:
    """``summary.md``: a header with the count per status (``reports.verdict.status``), then one
    row per run: its status, failed invariants and the first explanation of each failure (a broken
    or interrupted run: why); the skipped scenarios counted in the header and listed with their reason."""
    verdicts, skipped = split_skipped(verdicts)
    counts = {st: 0 for st in _MARK}
    for v in verdicts:
        counts[shown_status(v)] += 1
    head = ", ".join(f"{_MARK[st]} {n} {st}" for st, n in counts.items() if n or st == PASSED)
    if skipped:
        head += f", {_SKIPPED_MARK} {len(skipped)} skipped"
    lines = [f"### Hourglass — `{_md(system)}`", "", f"{len(verdicts)} runs in {batch_seconds(wall_s, check_s)}: {head}", "",
             "| run | status | failed invariants | first explanation |", "|---|---|---|---|"]
    for v in verdicts:
        st = shown_status(v)
        failed = failures(v)
        why = [e for _, e in failed] + ([start_words(v["started_ms"])] if failed and v.get("started_ms") else [])
        reason = v.get("broken") or v.get("interrupted")
        if reason:
            why.append(f"{'broken' if v.get('broken') else 'interrupted'}: {reason}")
        if st == UNDECIDED and not reason and (v.get("undecided") or {}).get("examples"):
            why.append(v["undecided"]["examples"][0].get("reason", ""))
        if st == FLAKY:
            why.extend(f"passed only on its retry; before: {e.get('status')}: {e.get('why') or '—'}" for e in v["earlier"])
        lines.append(f"| {_md(v.get('scenario') or v.get('run_id', '?'))} | {_MARK[st]} {st} | "
                     f"{_md('; '.join(n for n, _ in failed)) or '—'} | {'<br>'.join(_md(w) for w in why if w) or '—'} |")
    for v in skipped:
        lines.append(f"| {_md(v.get('scenario') or v.get('run_id', '?'))} | {_SKIPPED_MARK} skipped | — | {_md(v['skipped'])} |")
    return "\n".join(lines) + "\n"


def write_markdown(out_dir: Path, system: str, verdicts: list[dict], wall_s: float, check_s: float | None = None) -> Path:
    path = out_dir / SUMMARY_MD
    path.write_text(markdown_summary(system, verdicts, wall_s, check_s), encoding="utf-8")
    return path
