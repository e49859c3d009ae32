"""Times as people read them: offsets from the run's start (``t+12.345 s``) with the start itself
once in ISO 8601 UTC, never bare epoch milliseconds — in the report (with the ISO time on hover)
and in the text CI users read (the console, pytest's failure text, ``summary.md``, JUnit
messages). The verdict and the events keep epoch milliseconds (the contract); only what is shown
is rewritten, here.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Callable

#: an epoch-millisecond time in a sentence (13 digits: 2001..2286), not part of a longer number
EPOCH_MS = re.compile(r"(?<![\d.])1\d{12}(?![\d.])")
#: how far from the run's start a number may be and still be read as one of its times
RUN_SPAN_MS = 30 * 24 * 3600 * 1000


def iso_ms(ts_ms: int) -> str:
    """``2026-11-27T02:15:34.479Z``"""
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def offset_text(ts_ms: int, started_ms: int) -> str:
    """``t+12.345 s`` (``t−0.250 s`` before the start)."""
    d = (ts_ms - started_ms) / 1000
    return f"t{'+' if d >= 0 else '−'}{abs(d):.3f} s"


def with_offsets(text: str, started_ms: int | None, shown: Callable[[int, int], str] = offset_text) -> str:
    """``text`` with every epoch-ms time of the run (within :data:`RUN_SPAN_MS` of its start) as
    ``shown(ts_ms, started_ms)``, by default :func:`offset_text`; unchanged without a start (a run
    that never started, a verdict made before the start was recorded)."""
    if not started_ms or not text:
        return text
    return EPOCH_MS.sub(lambda m: shown(int(m.group()), started_ms) if abs(int(m.group()) - started_ms) <= RUN_SPAN_MS
                        else m.group(), text)


def start_words(started_ms: int | None) -> str:
    """What ``t+0`` is, said once beside the offsets."""
    return f"t+0 = {iso_ms(started_ms)} (the run's start)" if started_ms else ""
