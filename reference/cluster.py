"""Cluster topologies: a system with a second broker, and what a correct cluster may do to
delayed messages and retries when one of its brokers goes down.

A scenario's profile names its topology (``cluster``); the fault targets ``broker`` and
``broker-2`` (:data:`reference.contract.BROKER_TARGETS`) are its broker processes:

- ``single``: one broker (``broker``), the default.
- ``two-masters``: two masters of two broker names in one cluster (``broker`` and ``broker-2``).
  Every topic has queues on both (the admin creates it on every master), the producer spreads its
  sends over the queues of both (MQFaultStrategy.selectOneMessageQueue, round robin), and each
  master keeps its own schedule topic, ``delayOffset.json``, retry-topic queues and consume
  offsets. What one broker holds waits for that broker: a delayed message stored on the broker
  that is down is re-put after it is back (its window is widened by that outage, as for a single
  broker), and re-puts since its last persist may come twice (a kill -9); the other broker is
  untouched. A send to the broker that is down fails (``FAILED``: the connection is refused; the
  harness's producer does not retry), until the producer's route drops it. A consumer's send-back
  of a message from the broker that is down fails, and the client re-sends the retry through its
  own producer to ``%RETRY%group`` on a live master (ConsumeMessageConcurrentlyService.sendMessageBack,
  then DefaultMQPushConsumerImpl.sendMessageBack's fallback: :func:`reference.retry.send_back_route`).
- ``master-slave``: a master (``broker``, brokerId 0, ASYNC_MASTER) and its slave (``broker-2``,
  brokerId 1, SLAVE) of one broker name, without automatic failover (4.9.x and 5.x outside
  controller mode). The slave replicates the commit log (HAService) and copies the master's delay
  offsets and consume offsets every 10 s (SlaveSynchronize.syncAll); it never re-puts: the
  schedule service runs on a master only (DefaultMessageStore.handleScheduleMessageService). With
  the master down, consumers pull what the slave holds (PullAPIWrapper.recalculatePullFromWhichNode,
  MQClientInstance.findBrokerAddressInSubscribe: the master's address is gone from the route),
  sends fail, and delayed messages wait for the master: their windows are widened by the master's
  outage. Consume offsets committed to the slave meanwhile are not the master's: after the master
  is back, what was consumed from the slave may be delivered again (a consumer redelivery of the
  same stored copy, allowed after the master's ``start``). The slave down changes nothing a client
  sees (ASYNC_MASTER does not wait for it).
- ``controller`` (5.x): two replicas of one broker name (``broker``, ``broker-2``) in controller
  mode, the controller embedded in the name server (enableControllerInNamesrv), and
  ``allAckInSyncStateSet=true``: a send is acknowledged once every replica of the sync state set
  has it (with the default false an acknowledged message can be lost in a failover: measured on
  5.5.0, a message acknowledged 36 ms before the master's kill was truncated when the old master
  came back). The harness starts ``broker`` first, so it is the first master, and starts a run only
  once both replicas are in the sync state set. When the master dies the controller elects the
  other (0.06-0.56 s after a kill -9, measured on 5.3.3 and 5.5.0); ReplicasManager.changeToMaster
  starts its ScheduleMessageService from the delay offsets it last synced (SlaveSynchronize, at most
  :data:`REPLICA_SYNC_BOUND_MS` old) and its timer dequeue, so re-puts the old master made since then
  are made again: new stored copies, allowed from that long before the kill
  (:func:`reference.persistence.scheduler_duplicate_allowed`); both copies are consumed, and each
  LATER answer sends its own retry back (:func:`reference.expected.sent_back_copies`). Nothing is
  lost. Clients follow the new master at their next route refresh; windows are widened by the
  killed broker's outage. The killed broker comes back as a replica and re-puts nothing.

A send-back while a broker is down (either topology, and a single broker too: the mechanism is the
client's): DefaultMQPushConsumerImpl.sendMessageBack looks the master of the message's broker name
up in its route; once the route has dropped it the address is null and the request goes to the
name server, which does not answer a request code it does not know (DefaultRequestProcessor
returns no response), so the send-back fails only at its timeout (5 s; measured on 4.9.7: a
local re-consume 10 s after its LATER with the master down). The client's re-send through its own
producer then either stores the retry on a live master (two masters: the retry is stored up to
that much later) or fails too (no master: the same stored copy is re-consumed locally 5 s later).
A ``LATER`` answered while a broker is down, or up to the time a send-back takes before, may be
that much later (:func:`down_broker_lag_ms`, :data:`reference.network.SEND_BACK_FAILS_AFTER_MS`).

Which broker holds a message: a send records the broker name it was stored on (``send`` events'
``broker``; run.json's ``system.brokers`` maps each fault target to its broker name), so the window
of a message's first attempt is widened by the outages of that broker name's processes only
(:func:`outages_by_broker`: in two-masters a message on the live master is held to its own window
while the other is down). Where the model cannot tell (a retry, stored wherever its send-back
went; a send that did not say), an outage of either broker widens the window. A kill of either
broker allows the duplicates a kill allows. The persisted and in-memory schedule offsets are read per broker
(``snapshot`` events carry their ``target``) and judged per broker (``reports.offsets``).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from hourglass.reference.contract import BROKER_TARGETS
from hourglass.reference.network import SEND_BACK_FAILS_AFTER_MS, send_back_meets
from hourglass.reference.faults import effect
from hourglass.reference.windows import Outage, cluster_outages, merge_outages

#: How long a broker the name server dropped may stay out of its routes, and a new topic's route
#: unknown: the name server forgets a broker at once when the broker's channel closes or errs
#: (BrokerHousekeepingService.onChannelClose / onChannelException -> RouteInfoManager.onChannelDestroy),
#: and a broker closes that channel itself when one of its requests to the name server times out
#: (NettyRemotingClient.invokeSync: clientCloseSocketIfTimeout, true by default); a topic's own
#: registration (registerIncrementBrokerData) can fail the same way. BrokerController's periodic
#: registerBrokerAll brings both back, every registerNameServerPeriod clamped to 10-60 s (read at
#: 4.9.7, 5.0.0 and 5.3.3; the harness's brokers run it every 10 s, a cluster of a user's every 30 s).
REGISTERED_WITHIN_MS = 60_000

SINGLE = "single"
TWO_MASTERS = "two-masters"
MASTER_SLAVE = "master-slave"
CONTROLLER = "controller"
#: the topologies a scenario's profile may name (``cluster``)
CLUSTERS: tuple[str, ...] = (SINGLE, TWO_MASTERS, MASTER_SLAVE, CONTROLLER)
#: what each topology's second broker is (schema descriptions, reports)
SECOND_BROKER = {TWO_MASTERS: "the master of a second broker name", MASTER_SLAVE: "the slave of the same broker name",
                 CONTROLLER: "the second replica of the same broker name, in the sync state set of the name server's "
                             "controller (5.x): elected master when the master fails"}
#: SlaveSynchronize (5.x controller mode): a replica copies the master's delay offsets every 10 s,
#: on a 3 s tick (BrokerController: syncAll), so what it re-puts after its election repeats at most
#: what the master re-put this long before it failed
REPLICA_SYNC_BOUND_MS = 10_000 + 3_000
#: the primitive faults a cluster's second broker takes: its process's (a full store, a cut network
#: and a moved clock are the first broker's only)
SECOND_BROKER_ACTIONS = ("kill", "stop", "start", "pause", "resume")


def broker_targets(cluster: str) -> tuple[str, ...]:
    """The broker processes of a topology, by their fault targets."""
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster {cluster!r}: expected one of {', '.join(CLUSTERS)}")
    return BROKER_TARGETS[:1] if cluster == SINGLE else BROKER_TARGETS


def is_broker(target: str | None) -> bool:
    """Whether a fault target is one of the broker processes."""
    return target in BROKER_TARGETS


def snapshot_target(snap) -> str:
    """The broker process a schedule-offset snapshot was read from (before clusters: ``broker``)."""
    return snap.get("target") or BROKER_TARGETS[0]


def down_broker_lag_ms(faults: Iterable[Mapping]) -> Callable[[int], int]:
    """A function of a ``LATER``'s ``ts_ms``: how much later than usual its retry may be stored or
    re-consumed locally because its send-back met a broker that was down (see the module
    docstring): :data:`~reference.network.SEND_BACK_FAILS_AFTER_MS` when it
    :func:`~reference.network.send_back_meets` an outage, else 0."""
    meets = send_back_meets((o.down_ms, o.up_ms) for o in cluster_outages(faults))

    def lag(ts_ms: int) -> int:
        return SEND_BACK_FAILS_AFTER_MS if meets(ts_ms) else 0

    return lag


def outages_by_broker(run: Mapping, faults: Iterable[Mapping]) -> dict[str, list[Outage]]:
    """Broker name -> the outages that may hold back what that broker name stores: its own
    processes' (``run.json`` ``system.brokers``: target -> name), and the full store of the first
    broker. Empty for a run that does not say (a single broker, the simulator)."""
    faults = list(faults)
    names: dict[str, list[str]] = {}
    for target, broker in sorted(((run.get("system") or {}).get("brokers") or {}).items()):
        names.setdefault(broker.get("name"), []).append(target)
    return {name: merge_outages(effect("store", faults, targets=tuple(targets)))
            for name, targets in names.items() if name}
