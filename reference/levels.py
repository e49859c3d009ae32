"""Delay-level tables: parsing exactly as the broker does, formatting, and level clamping.

A table is the broker's ``messageDelayLevel`` string, e.g. the default
``"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"``: level *i* (1-based) is the
*i*-th space-separated token, a signed decimal number followed by one unit letter.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from hourglass.reference.contract import ContractError

#: MessageStoreConfig.messageDelayLevel's default (4.x and 5.x alike).
DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

#: The units ScheduleMessageService.parseDelayLevel knows, in milliseconds (lower case only).
UNIT_MS: dict[str, int] = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _wrap_int64(value: int) -> int:
    """Java ``long`` arithmetic: ``tu * num`` overflows silently."""
    return (value + 2**63) % 2**64 - 2**63


def _java_split_space(text: str) -> list[str]:
    """``String.split(" ")``: split on single spaces, then drop the trailing empty strings."""
    parts = text.split(" ")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_parse_long(digits: str) -> int | None:
    """``Long.parseLong``: an optional ``+``/``-`` then one or more decimal digits (any script,
    as ``Character.digit``), within the int64 range; ``None`` where Java throws."""
    if not digits:
        return None
    sign, body = 1, digits
    if digits[0] in "+-":
        sign, body = (-1 if digits[0] == "-" else 1), digits[1:]
    if not body:
        return None
    value = 0
    for ch in body:
        d = unicodedata.decimal(ch, None)
        if d is None:
            return None
        value = value * 10 + d
    value *= sign
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return value


@dataclass(frozen=True)
class LevelTable:
    """A parsed ``messageDelayLevel``: ``delays_ms[i]`` is the delay of level ``i + 1``."""

    delays_ms: tuple[int, ...]

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def clamp(self, level: int) -> int:
        """CommitLog.asyncPutMessage (4.9.x) / HookUtils.transformDelayLevelMessage (5.x): a level
        above the maximum becomes the maximum; 0 and below are not delayed (0)."""
        if level <= 0:
            return 0
        return level if level <= len(self.delays_ms) else len(self.delays_ms)

    def delay_ms(self, level: int) -> int:
        """ScheduleMessageService.computeDeliverTimestamp: the delay of a clamped level (0 → 0)."""
        level = self.clamp(level)
        return self.delays_ms[level - 1] if level else 0

    def format(self) -> str:
        return format_level_table(self)


def parse_level_table(text: object, where: str = "profile", field: str = "message_delay_level") -> LevelTable:
    """ScheduleMessageService.parseDelayLevel: accept what the broker accepts, reject what it
    rejects (the broker then exits with status 253), naming the bad token.

    Accepted: tokens ``<signed long><unit>`` with unit in ``s m h d``, separated by single spaces;
    trailing spaces (Java's ``split`` drops trailing empty strings); ``0s``, ``-1s``, ``+5s``.
    Rejected: empty string, leading or double space, tab, unknown or upper-case unit, ``10ms``,
    ``1.5s``, a bare unit, a number beyond int64. One deliberate difference: a string of spaces
    only, which the broker accepts as a table with no levels (and then cannot deliver any delayed
    message), is rejected here.
    """
    if not isinstance(text, str):
        raise ContractError(where, field, "a string of delays such as '1s 5s 10s'", text)
    tokens = _java_split_space(text)
    if not tokens:
        raise ContractError(where, field, "at least one delay level (the broker starts with an "
                            "empty level table and cannot deliver delayed messages)", text)
    delays: list[int] = []
    for index, token in enumerate(tokens, start=1):
        where_token = f"{where}: field '{field}' level {index} token {token!r}"
        if token == "":
            raise ContractError(f"{where} (level {index})", field,
                                "single spaces between levels and none leading (empty token)", text)
        unit = token[-1]
        if unit not in UNIT_MS:
            raise ContractError(where_token, None, "a unit s, m, h or d (lower case) at the end", unit)
        num = _java_parse_long(token[:-1])
        if num is None:
            raise ContractError(where_token, None, "an integer (optional + or -) before the unit", token[:-1])
        delays.append(_wrap_int64(UNIT_MS[unit] * num))
    return LevelTable(tuple(delays))


def format_level_table(table: LevelTable) -> str:
    """The canonical string of a table: each delay in the largest unit that divides it exactly."""
    out = []
    for delay in table.delays_ms:
        for unit in ("d", "h", "m", "s"):
            if delay % UNIT_MS[unit] == 0:
                out.append(f"{delay // UNIT_MS[unit]}{unit}")
                break
        else:
            raise ValueError(f"delay {delay} ms is not a whole number of seconds: no table string can state it")
    return " ".join(out)


DEFAULT_LEVEL_TABLE = parse_level_table(DEFAULT_MESSAGE_DELAY_LEVEL)
