"""The limits suite (part of conformance): every input the broker takes, at its edges.

The model says what a correct broker does at each edge — refuses the send (``expected_rejection``:
the judge checks it was not SEND_OK), clamps, or accepts and delivers when — and a send the broker
refuses as illegal input although the model accepts it is an INTEGRITY violation
(``reference.limits``). The scenarios share one profile, so they share one broker: a small
``timerMaxDelaySec`` (so "at the limit" is seconds away) and a small ``maxMessageSize`` (so a body
at the limit is cheap), both set on the broker and judged against.
"""

from __future__ import annotations

from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, Message, Profile, Scenario
from hourglass.reference.contract import TIMER
from hourglass.reference.levels import parse_level_table
from hourglass.reference.limits import CLIENT_MAX_MESSAGE_SIZE, RETRY_GROUP_MAX_LENGTH, TOPIC_MAX_LENGTH
from hourglass.reference.timer import JAVA_LONG

#: timerMaxDelaySec of the suite's broker: the edge is this many seconds ahead
MAX_DELAY_SEC = 8
#: maxMessageSize of the suite's broker (a body at it is stored; one byte more is refused)
MAX_SIZE = 64 * 1024
PROFILE = Profile(message_delay_level=COMPRESSED_LEVELS, timer_max_delay_sec=MAX_DELAY_SEC, max_message_size=MAX_SIZE)
_MAX_LEVEL = parse_level_table(COMPRESSED_LEVELS).max_level
LONG_MIN, LONG_MAX = JAVA_LONG
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LATER, OK = "LATER", "OK"


def _group(name: str, topic: str, **kw) -> tuple[ConsumerGroup, ...]:
    return (ConsumerGroup(f"cg-{name}", (topic,), **kw),)


def level_edges() -> Scenario:
    """Delay levels at the edges of the table and of a Java int: 1 and the maximum as they are,
    the maximum + 1 and 2^31 - 1 clamped to the maximum (CommitLog.asyncPutMessage /
    HookUtils.transformDelayLevelMessage), 0, -1 and -2^31 not delayed."""
    levels = (1, _MAX_LEVEL, _MAX_LEVEL + 1, INT_MAX, 0, -1, INT_MIN)
    msgs = tuple(Message(f"LE{i}", "LimLevels", at_ms=i * 100, delay_level=lv) for i, lv in enumerate(levels))
    return Scenario("limits-level-edges", msgs, _group("lim-levels", "LimLevels"), profile=PROFILE,
                    description=level_edges.__doc__)


#: (key, fields) of the timer edges: every client API at now, in the past, at timerMaxDelaySec and
#: just beyond it, the edges of a Java long, and the precedence of the properties
_TIMER_EDGES: tuple[tuple[str, dict], ...] = (
    ("sec-at-max", {"delay_time_sec": MAX_DELAY_SEC}),  # the broker's own clock: exactly at the limit, taken
    ("sec-beyond", {"delay_time_sec": MAX_DELAY_SEC + 1}),
    ("ms-at-max", {"delay_time_ms": MAX_DELAY_SEC * 1000}),
    ("ms-beyond", {"delay_time_ms": MAX_DELAY_SEC * 1000 + 1}),
    ("abs-inside", {"deliver_after_ms": MAX_DELAY_SEC * 1000 - 1500}),  # the client's clock: a margin either side
    ("abs-beyond", {"deliver_after_ms": MAX_DELAY_SEC * 1000 + 1500}),
    ("abs-now", {"deliver_after_ms": 0}),
    ("abs-past", {"deliver_after_ms": -5000}),
    ("abs-epoch", {"deliver_time_ms": 0}),
    ("abs-long-min", {"deliver_time_ms": LONG_MIN}),
    ("abs-long-max", {"deliver_time_ms": LONG_MAX}),
    ("sec-zero", {"delay_time_sec": 0}),
    ("sec-negative", {"delay_time_sec": -1}),
    ("sec-long-max", {"delay_time_sec": LONG_MAX}),  # sec * 1000 wraps: in the past, delivered at once
    ("sec-wraps-sum", {"delay_time_sec": LONG_MAX // 1000}),  # the product fits, now + it wraps
    ("ms-long-max", {"delay_time_ms": LONG_MAX}),
    ("ms-long-min", {"delay_time_ms": LONG_MIN}),
    ("sec-wins", {"delay_time_sec": 2, "delay_time_ms": LONG_MAX, "deliver_time_ms": LONG_MAX}),
    ("ms-wins", {"delay_time_ms": 3000, "deliver_time_ms": LONG_MAX}),
    ("level-wins", {"delay_level": 2, "delay_time_sec": MAX_DELAY_SEC + 100}),
)


def timer_edges() -> Scenario:
    """5.x timer messages through every client API (setDeliverTimeMs, setDelayTimeSec,
    setDelayTimeMs) at now, in the past, at timerMaxDelaySec (taken), just beyond it (refused:
    MESSAGE_ILLEGAL), at the edges of a Java long (a delay whose sum wraps lands in the past:
    delivered at once), with several properties (TIMER_DELAY_SEC wins, then TIMER_DELAY_MS) and
    with a delay level (the level wins) — HookUtils.transformTimerMessage."""
    msgs = tuple(Message(f"TE-{key}", "LimTimer", at_ms=i * 100, **fields) for i, (key, fields) in enumerate(_TIMER_EDGES))
    return Scenario("limits-timer-edges", msgs, _group("lim-timer", "LimTimer"), profile=PROFILE, requires=(TIMER,),
                    description=timer_edges.__doc__)


def body_sizes() -> Scenario:
    """Bodies at the size limits: empty and above the client's 4 MiB (the client refuses them),
    one byte, at the broker's maxMessageSize (stored, and so are its re-put copy, its retry copy
    and its DLQ copy, each a few properties larger: MessageExtEncoder reserves 64 KiB beyond the
    body, 4.9.5+), one byte above it (refused: MESSAGE_ILLEGAL)."""
    msgs = (
        Message("BS-empty", "LimBody", at_ms=0, body_size=0),
        Message("BS-one", "LimBody", at_ms=100, body_size=1),
        Message("BS-at-max", "LimBody", at_ms=200, body_size=MAX_SIZE),
        Message("BS-over-max", "LimBody", at_ms=300, body_size=MAX_SIZE + 1),
        Message("BS-over-client", "LimBody", at_ms=400, body_size=CLIENT_MAX_MESSAGE_SIZE + 1),
        Message("BS-delayed-at-max", "LimBody", at_ms=500, body_size=MAX_SIZE, delay_level=3),
        Message("BS-retried-at-max", "LimBody", at_ms=600, body_size=MAX_SIZE, plan=(LATER, OK)),
        Message("BS-dlq-at-max", "LimBody", at_ms=700, body_size=MAX_SIZE, plan=(LATER, LATER)),
    )
    return Scenario("limits-body-sizes", msgs, _group("lim-body", "LimBody", max_reconsume_times=1), profile=PROFILE,
                    description=body_sizes.__doc__)


def name_lengths() -> Scenario:
    """A topic name at its limit (127 characters, TopicValidator) and a consumer group at the
    longest whose retry topic is a valid topic (120): delayed, retried and sent to the DLQ like
    any other."""
    topic = ("LimTopic" + "x" * TOPIC_MAX_LENGTH)[:TOPIC_MAX_LENGTH]
    group = ("cg-lim-names" + "y" * RETRY_GROUP_MAX_LENGTH)[:RETRY_GROUP_MAX_LENGTH]
    msgs = (Message("NL-plain", topic, at_ms=0), Message("NL-delayed", topic, at_ms=100, delay_level=2),
            Message("NL-retried", topic, at_ms=200, plan=(LATER, OK)), Message("NL-dlq", topic, at_ms=300, plan=(LATER, LATER)))
    return Scenario("limits-name-lengths", msgs, (ConsumerGroup(group, (topic,), max_reconsume_times=1),), profile=PROFILE,
                    description=name_lengths.__doc__)


LIMITS: tuple[Scenario, ...] = tuple(f() for f in (level_edges, timer_edges, body_sizes, name_lengths))
