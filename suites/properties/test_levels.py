"""Delay-level tables: the parser accepts exactly the broker's grammar (ScheduleMessageService.
parseDelayLevel), names the bad token otherwise, round-trips, and clamping behaves."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.contract import ContractError
from hourglass.reference.levels import DEFAULT_LEVEL_TABLE, DEFAULT_MESSAGE_DELAY_LEVEL, LevelTable, UNIT_MS, format_level_table, parse_level_table

# The broker's grammar for ASCII input, as an independent oracle: single-space separated tokens
# <sign?><digits><unit>, trailing spaces dropped by String.split, at least one token.
_TOKEN = re.compile(r"[+-]?[0-9]+[smhd]")


def broker_accepts(text: str) -> bool:
    tokens = text.split(" ")
    while tokens and tokens[-1] == "":
        tokens.pop()
    return bool(tokens) and all(_TOKEN.fullmatch(t) and abs(int(t[:-1])) < 2**63 for t in tokens)


@pytest.mark.parametrize("text", ["", " 1s", "1s  5s", "1s\t5s", "1S", "5x", "10ms", "1.5s", "s", "+s", "1s,5s", "１s x"])
def test_broker_rejected_tables_are_rejected_naming_the_field(text):
    with pytest.raises(ContractError) as e:
        parse_level_table(text)
    assert "message_delay_level" in str(e.value)


@pytest.mark.parametrize("text,delays_ms", [
    ("0s", (0,)), ("-1s", (-1000,)), ("+5s", (5000,)), ("1s 5s ", (1000, 5000)), ("2d", (172_800_000,)),
    ("1s 1m 1h 1d", (1000, 60_000, 3_600_000, 86_400_000)),
])
def test_broker_accepted_tables_are_accepted(text, delays_ms):
    assert parse_level_table(text).delays_ms == delays_ms


def test_the_bad_token_is_named():
    with pytest.raises(ContractError) as e:
        parse_level_table("1s 5s 10x 30s")
    assert "'10x'" in str(e.value) and "level 3" in str(e.value)


def test_default_table_has_18_levels_from_1s_to_2h():
    assert DEFAULT_LEVEL_TABLE.max_level == 18
    assert DEFAULT_LEVEL_TABLE.delays_ms[0] == 1000 and DEFAULT_LEVEL_TABLE.delays_ms[-1] == 7_200_000
    assert format_level_table(DEFAULT_LEVEL_TABLE) == DEFAULT_MESSAGE_DELAY_LEVEL


@given(st.text(alphabet="0123456789smhdS+-. \tx", max_size=30))
def test_parser_accepts_exactly_what_the_broker_accepts(text):
    try:
        parse_level_table(text)
        accepted = True
    except ContractError:
        accepted = False
    assert accepted == broker_accepts(text)


delays = st.lists(st.integers(-10**6, 10**9).map(lambda n: n * 1000), min_size=1, max_size=30)


@given(delays)
def test_format_then_parse_round_trips(ds):
    table = LevelTable(tuple(ds))
    assert parse_level_table(format_level_table(table)) == table


@given(st.lists(st.sampled_from([f"{n}{u}" for n in range(0, 90) for u in UNIT_MS]), min_size=1, max_size=20))
def test_parse_then_format_is_stable(tokens):
    once = format_level_table(parse_level_table(" ".join(tokens)))
    assert format_level_table(parse_level_table(once)) == once


@given(delays, st.integers(-5, 60))
def test_clamping_is_idempotent_and_within_the_table(ds, level):
    table = LevelTable(tuple(ds))
    c = table.clamp(level)
    assert table.clamp(c) == c
    assert 0 <= c <= table.max_level
    assert c == (0 if level <= 0 else min(level, table.max_level))
    assert table.delay_ms(level) == (table.delays_ms[c - 1] if c else 0)
