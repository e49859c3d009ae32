"""Network faults of the broker (``reference.network``): cut off, slowed or losing packets, in a
network namespace of its own."""

from __future__ import annotations

from hourglass.reference.faults import OPTIONAL, REQUIRED, Family, Param, Primitive, StepKind

PARTITION, PARTITION_END = "partition", "partition_end"
LATENCY, LATENCY_END = "latency", "latency_end"
LOSS, LOSS_END = "loss", "loss_end"
#: the primitive fault actions of network faults (``fault`` events of ``target: broker``)
NET_ACTIONS = (PARTITION, PARTITION_END, LATENCY, LATENCY_END, LOSS, LOSS_END)
#: the primitive that ends each network fault, and the one each end ends
NET_END = {PARTITION: PARTITION_END, LATENCY: LATENCY_END, LOSS: LOSS_END}
NET_START = {end: start for start, end in NET_END.items()}
#: a loss drops 1..100 % of the packets (100: a partition by another name)
MAX_LOSS_PERCENT = 100
#: ClientHousekeepingService / RouteInfoManager: 120 s without a heartbeat; partitions stay below
MAX_PARTITION_MS = 100_000
#: the largest netem delay a latency step may add (below every client timeout, with room for the
#: round trip)
MAX_DELAY_MS = 1_000
#: what its system must be set up for: the broker in a network namespace of its own
OWN_NETWORK = "own_network"


def _expand(step) -> list:
    fields = {"delay_ms": step.delay_ms} if step.action == LATENCY else (
        {"loss_percent": step.loss_percent} if step.action == LOSS else {})
    return [(0, step.action, fields)] + ([(step.duration_ms, NET_END[step.action], {})] if step.duration_ms else [])


def _bounded(step, raw) -> str | None:
    duration = raw.get("duration_ms", "missing")
    if duration == "missing" or not 0 < duration <= MAX_PARTITION_MS:
        return (f"how long the {step.action} lasts, 1..{MAX_PARTITION_MS} (a longer one outlives the broker's 120 s "
                "channel expiry: reference.network)")
    return None


_NET = dict(broker_only=True, what="acts on the broker's network", setup=frozenset({OWN_NETWORK}))

FAMILY = Family(
    name="network",
    rank=30,
    steps=(
        StepKind(PARTITION, _expand, REQUIRED, delays_deliveries=True, check_duration=_bounded, **_NET,
                 description="partition = cut the broker off from its clients and the name server for duration_ms (> 0)"),
        StepKind(LATENCY, _expand, OPTIONAL, params=("delay_ms",), **_NET,
                 description="latency = delay what the broker sends by delay_ms for duration_ms (0: to the end)"),
        StepKind(LOSS, _expand, REQUIRED, params=("loss_percent",), delays_deliveries=True, check_duration=_bounded,
                 **_NET, description="loss = drop loss_percent of the packets in and out of the broker for duration_ms (> 0)"),
    ),
    primitives=(
        Primitive(PARTITION, verb="partition", heals=PARTITION_END), Primitive(PARTITION_END, verb="heal_partition"),
        Primitive(LATENCY, verb="add_latency", args=("delay_ms",), heals=LATENCY_END),
        Primitive(LATENCY_END, verb="remove_latency"),
        Primitive(LOSS, verb="add_loss", args=("loss_percent",), heals=LOSS_END), Primitive(LOSS_END, verb="remove_loss"),
    ),
    params=(
        Param("delay_ms", 0, MAX_DELAY_MS, "a delay", f"the delay the latency adds, 1..{MAX_DELAY_MS}",
              f"latency only: the delay added to every packet the broker sends (1..{MAX_DELAY_MS}); must be 0 for the "
              "others."),
        Param("loss_percent", 0, MAX_LOSS_PERCENT, "a share", f"the share of packets the loss drops, 1..{MAX_LOSS_PERCENT}",
              f"loss only: the share of packets in and out of the broker dropped at random (1..{MAX_LOSS_PERCENT}); "
              "must be 0 for the others."),
    ),
    event_fields=(("delay_ms", "int", "latency: the delay added to every packet the broker sends"),
                  ("loss_percent", "int", "loss: the share of packets in and out of the broker dropped")),
    effects={"unknown_send": "hourglass.reference.network:unknown_send_outages"},
    skip_words="act on the network of",
)
