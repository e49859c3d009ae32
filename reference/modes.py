"""How a consumer group consumes: its mode, and the unit the model judges it by.

``concurrently`` (MessageListenerConcurrently, clustering: a LATER is sent back to ``%RETRY%group``,
``reference.retry``), ``orderly`` (MessageListenerOrderly, clustering: ``reference.orderly``) and
``broadcasting`` (MessageModel.BROADCASTING: every instance of the group gets every message,
``reference.broadcast``), and ``pop`` (the remoting push consumer in POP mode, 5.x: the broker
hands the group's queues out by pop and revives what was not acked, ``reference.pop``), and the gRPC
clients' ``grpc-simple`` (SimpleConsumer: receive with an invisible duration, ack) and ``grpc-push``
(PushConsumer: the proxy hands out the group's retry policy and dead-letters after maxAttempts). A
clustering group (a POP group too) is one unit: its instances share its queues and its
offsets, so a message is owed to the group once. A broadcasting group's instances are a unit each
(:func:`unit_group`): the message is owed to every one of them, and each keeps its own offsets.
"""

from __future__ import annotations

from hourglass.reference.pop import GRPC_PUSH, GRPC_SIMPLE, POP_MODES

CONCURRENTLY, ORDERLY, BROADCASTING = "concurrently", "orderly", "broadcasting"
MODES: tuple[str, ...] = (CONCURRENTLY, ORDERLY, BROADCASTING) + POP_MODES
#: the modes whose consumers talk to the gRPC proxy (5.x), not to the broker
GRPC_MODES: tuple[str, ...] = (GRPC_SIMPLE, GRPC_PUSH)
#: What joins a broadcasting group and its instance's index in the ``group`` of that instance's
#: events (``reference.contract``): ``cg-news@1``. Validators.checkGroup allows no ``@`` in a group
#: name, so a unit name is never a real group's.
UNIT_SEPARATOR = "@"


def unit_group(group: str, instance: int) -> str:
    """The judging unit of instance ``instance`` of broadcasting group ``group``."""
    return f"{group}{UNIT_SEPARATOR}{instance}"


def group_of(unit: str) -> str:
    """The consumer group of a judging unit (a clustering group is its own unit)."""
    return unit.split(UNIT_SEPARATOR, 1)[0]
