"""A stored copy's identity (DESIGN.md "stored copy"): the one rule the model, both judges and the
harness's anchors read.

A broker stores a message once per copy (a first attempt, each retry's send-back, a re-put the
schedule service repeats); a consumer may get one copy several times (a redelivery). A delivery
names its copy by its broker's commit-log offset where it has one, else by its queue position
(queue topic — its topic where it names none —, queue id, queue offset), each within its broker
(``broker``: the brokers of a cluster have their own commit logs and queues, ``reference.cluster``).

A delivery without a broker name is of a broker of its own, "unnamed": a run names the broker of
every delivery (a cluster's consumers, the RocketMQ consumer always) or of none (one broker, the
simulator), so within a run the absent name is the one broker that run did not name. Two
deliveries are of the same copy exactly when their keys are equal: a key, not a likeness, so the
rule is the same where copies are counted (a set of keys) and where two deliveries are compared,
on the event-at-a-time and on the columnar path.
"""

from __future__ import annotations

from typing import Mapping

#: The delivery fields a stored copy's identity reads.
FIELDS: tuple[str, ...] = ("broker", "commit_log_offset", "queue_topic", "topic", "queue_id", "queue_offset")


def stored_copy_key(d: Mapping) -> tuple:
    """A delivery's stored copy as a key: (broker, commit-log offset) where it has one, else
    (broker, queue topic, queue id, queue offset); the broker ``None`` where the delivery names none."""
    clo = d.get("commit_log_offset")
    if clo is not None:
        return (d.get("broker"), clo)
    return (d.get("broker"), d.get("queue_topic") or d.get("topic"), d.get("queue_id"), d.get("queue_offset"))


def same_stored_copy(first: Mapping, second: Mapping) -> bool:
    """Whether two deliveries are of the same stored copy: their keys are equal."""
    return stored_copy_key(first) == stored_copy_key(second)
