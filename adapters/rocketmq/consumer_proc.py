"""A consumer process: one push consumer (concurrently) of the official Java client, following
each message's plan, in its own OS process so a fault (or a ``CRASH`` answer) can kill it.

Run as ``python -m hourglass.adapters.rocketmq.consumer_proc --lib LIB --namesrv ADDR --group G --topic T
[--topic T2] --max-reconsume-times N --events FILE --log-dir DIR``. It prints one JSON line
``{"ready": true}`` on its original stdout once the consumer has started.

For every delivery it appends a contract ``deliver`` event to ``--events`` (one line, flushed,
*before* answering the broker), then answers with the plan's entry for that delivery as
:func:`reference.plans.next_answer` rules it: each first delivery of an attempt (and each one after
its own CRASH) takes the next entry of the message's ``HG_PLAN`` property, ``OK`` after the list
ends; a redelivery of an attempt already answered OK/LATER is acknowledged OK. ``CRASH`` records
the event, then the consumer's own death (a ``fault`` ``kill`` of target ``consumer``, ``cause:
died``), both fsynced, and ends the process with ``os._exit(CRASH_EXIT)`` without answering: that
exit status tells the harness's exit watch the death is already recorded (any other exit it records
itself, ``cause: exited``). Plan positions are the group's: before each answer they are rebuilt from
the deliveries every instance of the group recorded (:class:`GroupHistory`), so they survive a
restart and follow a message to whichever instance its retry or its moved queue reaches.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import zlib
from pathlib import Path

from hourglass.adapters.rocketmq.jvm import Channel, exit_now, now_ms, start_jvm
from hourglass.adapters.rundir import EventLog
from hourglass.reference.contract import BODY_CRC_PROPERTY, CONSUMER_DIED, CONSUMER_TARGET, PLAN_PROPERTY, SENT_BACK, consumer_fault
from hourglass.reference.modes import BROADCASTING, CONCURRENTLY, MODES, ORDERLY, unit_group
from hourglass.reference.orderly import DEFAULT_SUSPEND_MS
from hourglass.reference.pop import POP, SLOW_HOLD_PAST_MS, pop_answer
from hourglass.reference.plans import CRASH, LATER, OK, SLOW, answer_batch, answer_word, by_ack_index, is_later, later_level, replay_cursor
from hourglass.reference.rundir import consumer_events
from hourglass.reference.timeout import DEFAULT_CONSUME_TIMEOUT_MIN, effective_timeout_min, hold_ms

#: Exit status of a consumer that died on a CRASH answer and recorded its own death.
CRASH_EXIT = 17
#: Exit status of a consumer that died on a CRASH answer but could not record its death (the exit
#: watch records it instead).
CRASH_UNRECORDED_EXIT = 18


def delivered_attempts(events_file: Path, group: str) -> dict[str, list]:
    """The reconsume_times of the deliveries per key already recorded in ``events_file``, in order,
    as :func:`reference.plans.replay_cursor` takes them (a torn last line is skipped)."""
    history = GroupHistory(group, events_file.parent, (events_file.name,))
    history.refresh()
    return {key: history.delivered(key) for key in history.by_key}


class GroupHistory:
    """The deliveries of a consumer group recorded so far by *every* instance of the group, read
    from the run's consumer events files (each instance's own, written before it answers): a
    message's plan positions are the group's, not one process's. The retry of a message another
    instance answered LATER is delivered where ``%RETRY%group``'s queue is, and a queue that moved
    (a death, a rebalance) brings its messages to another instance: each must go on in the plan
    where the group stopped (reference.plans.replay_cursor), not start it over. ``names``: only
    these files (default: every ``consumer-*.jsonl``); a torn last line waits for its end."""

    def __init__(self, group: str, events_dir: Path, names: tuple[str, ...] | None = None):
        self.group, self.events_dir, self.names = group, events_dir, names
        self.offsets: dict[Path, int] = {}
        self.by_key: dict[str, list[tuple[int, object]]] = {}  # key -> (ts_ms, replay item), as read

    def refresh(self) -> None:
        """Read what the files gained since the last look (complete lines only)."""
        paths = ([self.events_dir / n for n in self.names] if self.names is not None
                 else sorted(self.events_dir.glob(consumer_events("*"))))
        for path in paths:
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets.get(path, 0))
                    data = f.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n") + 1
            self.offsets[path] = self.offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                try:
                    ev = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(ev, dict) and ev.get("type") == "deliver" and ev.get("group") == self.group:
                    rt = int(ev.get("reconsume_times", 0))
                    item = (rt, True) if by_ack_index(ev) else rt
                    self.by_key.setdefault(ev["key"], []).append((int(ev.get("ts_ms") or 0), item))

    def delivered(self, key: str) -> list:
        """``key``'s deliveries in the group, in time order, as replay_cursor takes them."""
        return [item for _, item in sorted(self.by_key.get(key, ()), key=lambda x: x[0])]


def pop_ck_times(msg) -> tuple[int | None, int | None]:
    """A POP delivery's pop time and invisible time, from its ``POP_CK`` property
    (ExtraInfoUtil.buildExtraInfo: "ckOffset popTime invisibleTime ..."); None where it has none."""
    parts = str(msg.getProperty("POP_CK") or "").split()
    popped = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    invisible = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
    return popped, invisible


class PlanFollower:
    def __init__(self, group: str, events_file: Path, name: str = "c", orderly_max: int | None = None,
                 consume_timeout_min: int = DEFAULT_CONSUME_TIMEOUT_MIN):
        self.group = group
        self.hold_limit_ms = hold_ms(consume_timeout_min)
        self.orderly_max = orderly_max  # an orderly consumer's maxReconsumeTimes (reference.plans.orderly_next)
        self.name = name
        self.events_file = events_file
        # plan positions follow reference.plans.next_answer: a redelivery of an attempt already
        # answered OK/LATER (after another message's CRASH) is acknowledged without taking an entry;
        # they are the group's, rebuilt from every instance's events before each answer
        self.history = GroupHistory(group, events_file.parent)
        self.last_ms: dict[str, int] = {}  # per key, the ts_ms of its last recorded delivery (stamp)
        self._out = EventLog(events_file)  # starts on a fresh line after a torn one
        self._lock = threading.Lock()
        #: msg_id -> (key, reconsume_times) of its last delivery answered LATER: what a send-back
        #: request (:func:`make_send_back_hook`) names it by
        self.laters: dict[str, tuple[str, int]] = {}
        #: (key, reconsume_times) -> set once a later attempt of a held (SLOW) message came (or at stop)
        self.held: dict[tuple[str, int], threading.Event] = {}
        self.stopping = threading.Event()

    def stamp(self, key: str) -> int:
        """``ts_ms`` of a delivery of ``key`` being recorded (called with the lock held): now, but
        after this key's previous one. Two consume threads racing on a copy pulled twice (a
        rebalance) could otherwise record it twice in one millisecond, byte for byte; so no line of
        this file ever repeats another, and the checker takes an exact repeat for the recording
        fault it is (``reports.inputs.repeated_lines``), not a redelivery."""
        ts = now_ms()
        prev = self.last_ms.get(key)
        if prev is not None and ts <= prev:
            ts = prev + 1
        self.last_ms[key] = ts
        return ts

    def _event(self, msg, queue) -> dict:
        """The ``deliver`` event of ``msg`` (pulled from ``queue``), without its time and answer."""
        from org.apache.rocketmq.common.message import MessageClientIDSetter

        key = str(msg.getKeys()) if msg.getKeys() is not None else ""
        body = bytes(msg.getBody()) if msg.getBody() is not None else b""
        uniq = MessageClientIDSetter.getUniqID(msg)
        event = {
            "type": "deliver", "ts_ms": None, "key": key, "group": self.group,
            "topic": str(msg.getTopic()), "queue_id": int(queue.getQueueId()),
            "queue_offset": int(msg.getQueueOffset()), "queue_topic": str(queue.getTopic()),
            "broker": str(queue.getBrokerName()),
            "commit_log_offset": int(msg.getCommitLogOffset()), "body_crc": zlib.crc32(body),
            "msg_id": str(uniq if uniq is not None else msg.getMsgId()),
            "reconsume_times": int(msg.getReconsumeTimes()), "born_ms": int(msg.getBornTimestamp()),
            "store_ms": int(msg.getStoreTimestamp()), "member": self.name,
        }
        popped, _ = pop_ck_times(msg)
        if popped is not None:
            event["pop_ms"] = popped
        sent_crc = msg.getUserProperty(BODY_CRC_PROPERTY)
        if sent_crc is not None and str(sent_crc) != str(event["body_crc"]):
            event["sent_body_crc"] = int(str(sent_crc))
        return event

    def _cursor(self, key: str, msg) -> tuple[tuple[str, ...], object]:
        """The message's plan and this group's cursor in it (rebuilt from the events file after a restart)."""
        prop = msg.getUserProperty(PLAN_PROPERTY)
        plan = tuple(p.strip() for p in str(prop).split(",")) if prop is not None and str(prop) else ()
        return plan, replay_cursor(plan, self.history.delivered(key), self.orderly_max)

    def hold(self, event: dict, limit_ms: int) -> None:
        """A ``SLOW`` answer (reference.timeout): keep the listener's thread until the message's
        next attempt came (the client's clean-up sent it back), the consumer stops, or ``limit_ms``."""
        with self._lock:
            done = self.held.setdefault((event["key"], event["reconsume_times"]), threading.Event())
            if self.stopping.is_set():
                done.set()
        done.wait(limit_ms / 1000)
        with self._lock:
            self.held.pop((event["key"], event["reconsume_times"]), None)

    def stop_holding(self) -> None:
        """At the consumer's stop: every held listener answers now (the shutdown does not wait for
        its timeout), and none holds from now on."""
        with self._lock:
            self.stopping.set()
            self.release()

    def release(self, key: str | None = None, reconsume_times: int = 0) -> None:
        """Let go of the held listeners of ``key``'s attempts before ``reconsume_times`` (all: at stop).
        Called with the lock held, or at stop."""
        for (k, rt), done in list(self.held.items()):
            if key is None or (k == key and rt < reconsume_times):
                done.set()

    def on_batch(self, msgs, queue, batched: bool) -> tuple[str, int, int]:
        """Answer one call of the listener: (answer, ack index, the delay level asked for), as
        :func:`reference.plans.answer_batch` rules it (each message by its plan until one is not
        OK; the rest sent back unasked; a CRASH records what came before it, unacknowledged, and
        dies). Every event is written before the answer; ``batched`` adds each one's place and
        the batch's ack index."""
        with self._lock:
            events = [self._event(msg, queue) for msg in msgs]
            self.history.refresh()
            answer = answer_batch([(*self._cursor(e["key"], msg), e["reconsume_times"], e["key"]) for e, msg in zip(events, msgs)],
                                  orderly_max=self.orderly_max)
            for i, (event, outcome) in enumerate(zip(events, answer.outcomes)):
                event["ts_ms"] = self.stamp(event["key"])
                event["outcome"] = outcome
                self.release(event["key"], event["reconsume_times"])
                if outcome == LATER and answer.level:
                    event["next_level"] = answer.level
                if outcome == LATER and answer.held:
                    event["timed_out"] = True
                if batched:
                    event["batch_index"] = i
            if answer.crashed:
                done = events[:len(answer.outcomes)]
                for e in done:
                    self._out.write(e, fsync=e is done[-1])
                self.die()
            for e in events:
                if batched:
                    e["ack_index"] = answer.ack_index
                if e["outcome"] == LATER:
                    self.laters[e["msg_id"]] = (e["key"], e["reconsume_times"])
                self._out.write(e)
        if answer.held:  # the client's clean-up sends it back; the listener answers OK after
            self.hold(events[answer.ack_index], self.hold_limit_ms)
            return OK, answer.ack_index, 0
        failed = LATER in answer.outcomes
        return (LATER if failed else OK), answer.ack_index, answer.level

    def sent_back(self, msg_id: str) -> None:
        """The client is sending back the copy ``msg_id`` (its last LATER): record when
        (contract.SENT_BACK; a copy this consumer did not answer LATER is not recorded)."""
        with self._lock:
            found = self.laters.get(msg_id)
            if found is not None:
                self._out.write({"type": "fault", "ts_ms": now_ms(), "action": SENT_BACK, "target": CONSUMER_TARGET,
                                 "name": self.name, "group": self.group, "key": found[0], "reconsume_times": found[1]})

    def pop_times(self, msg) -> tuple[int | None, int | None]:
        """A POP delivery's pop time and invisible time (:func:`pop_ck_times`)."""
        return pop_ck_times(msg)

    def on_pop(self, msg, queue) -> tuple[str, int]:
        """Answer one POP delivery by its attempt's own plan entry (reference.pop.pop_answer): (answer,
        the POP level asked for). A ``SLOW`` holds the listener until the copy's invisible time has run
        out (its POP_CK's pop time + invisible time, + reference.pop.SLOW_HOLD_PAST_MS): the client then
        drops the answer (ConsumeRequest.run, isPopTimeout) and the broker revives the copy."""
        with self._lock:
            event = self._event(msg, queue)
            plan = self._cursor(event["key"], msg)[0]
            word = pop_answer(plan, event["reconsume_times"])
            event["ts_ms"], event["outcome"] = self.stamp(event["key"]), answer_word(word)
            level = later_level(word) if is_later(word) and word != SLOW else 0
            if level:
                event["next_level"] = level
            if word == SLOW:
                event["timed_out"] = True
            self.answering(event, msg)
            self._out.write(event, fsync=word == CRASH)
            if word == CRASH:  # the consumer dies with every copy it holds (a scenario gives a POP group none)
                self.die()
        if word == SLOW:
            popped, invisible = self.pop_times(msg)
            until = popped + invisible + SLOW_HOLD_PAST_MS if popped is not None and invisible is not None else 0
            self.stopping.wait(max(0, until - now_ms()) / 1000)
            return OK, 0
        return (LATER if event["outcome"] == LATER else OK), level

    def answering(self, event: dict, msg) -> None:
        """Before a POP delivery's event is written: a consumer that acks by itself (a gRPC
        SimpleConsumer) acks an OK here and records a refused ack in it."""

    def die(self) -> None:
        """End the process now, after recording its death (fsynced) where its deliveries are.
        Called with the lock held: no other delivery is recorded after the death."""
        status = CRASH_EXIT
        try:
            self._out.write(consumer_fault("kill", now_ms(), self.name, self.group, CONSUMER_DIED), fsync=True)
        except BaseException:  # noqa: BLE001 - dying anyway; the exit watch records the death
            status = CRASH_UNRECORDED_EXIT
        os._exit(status)


def make_listener(follower: PlanFollower, batched: bool = False, popping: bool = False):
    from jpype import JImplements, JOverride
    from org.apache.rocketmq.client.consumer.listener import ConsumeConcurrentlyStatus

    @JImplements("org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently")
    class Listener:
        @JOverride
        def consumeMessage(self, msgs, context):
            if popping:  # one message a call (reference.pop.pop_answer)
                answer, level = follower.on_pop(msgs[0], context.getMessageQueue())
                if level:  # ConsumeMessagePopConcurrentlyService.changePopInvisibleTime's level
                    context.setDelayLevelWhenNextConsume(level)
                return ConsumeConcurrentlyStatus.RECONSUME_LATER if answer == LATER else ConsumeConcurrentlyStatus.CONSUME_SUCCESS
            answer, ack, level = follower.on_batch(list(msgs), context.getMessageQueue(), batched)
            if level:  # ConsumeMessageConcurrentlyService.sendMessageBack sends it in the header
                context.setDelayLevelWhenNextConsume(level)
            if not batched:  # one message a call: a LATER is RECONSUME_LATER (ack index -1)
                return ConsumeConcurrentlyStatus.RECONSUME_LATER if answer == LATER else ConsumeConcurrentlyStatus.CONSUME_SUCCESS
            context.setAckIndex(ack)  # processConsumeResult sends back every message after it
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    return Listener()


#: RequestCode.CONSUMER_SEND_MSG_BACK (4.9.x and 5.x)
CONSUMER_SEND_MSG_BACK = 36


def make_send_back_hook(follower: PlanFollower):
    """An RPCHook that records each send-back request as it leaves the client
    (DefaultMQPushConsumerImpl.sendMessageBack -> MQClientAPIImpl.consumerSendMessageBack: its
    ConsumerSendMsgBackRequestHeader's originMsgId is the copy's msg id as the deliver event has
    it): :meth:`PlanFollower.sent_back`. Every other request passes untouched."""
    from jpype import JImplements, JOverride

    @JImplements("org.apache.rocketmq.remoting.RPCHook")
    class SendBackHook:
        @JOverride
        def doBeforeRequest(self, remote_addr, request):
            if request.getCode() == CONSUMER_SEND_MSG_BACK:
                header = request.readCustomHeader()
                if header is not None and header.getOriginMsgId() is not None:
                    follower.sent_back(str(header.getOriginMsgId()))

        @JOverride
        def doAfterResponse(self, remote_addr, request, response):
            pass

    return SendBackHook()


def make_orderly_listener(follower: PlanFollower):
    """MessageListenerOrderly (reference.orderly): a LATER suspends the queue
    (SUSPEND_CURRENT_QUEUE_A_MOMENT: the client consumes the message again after the suspend time,
    its reconsume count raised, and sends it to the DLQ through its producer once the count reached
    maxReconsumeTimes); the plan's LATER:n cannot be given here (the scenario refuses it)."""
    from jpype import JImplements, JOverride
    from org.apache.rocketmq.client.consumer.listener import ConsumeOrderlyStatus

    @JImplements("org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly")
    class Listener:
        @JOverride
        def consumeMessage(self, msgs, context):
            answer, _, _ = follower.on_batch(list(msgs), context.getMessageQueue(), False)
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT if answer == LATER else ConsumeOrderlyStatus.SUCCESS

    return Listener()


def make_allocation():
    """The official averaging allocation over the group's *distinct* client ids.

    A broker may list one client twice: when a heartbeat sent on a connection the client is
    closing (the broker just restarted) is processed after that connection's close event, the
    closed channel stays registered beside the new one until it expires (``channelExpiredTimeout``,
    120 s). Averaging over ``[me, me]`` gives this consumer half the queues and nobody the rest,
    so their messages wait, stored and unpulled, for minutes: a consumer stall the harness would
    read as a loss (seen on 5.3.3 after a kill -9). Every distinct client is a real consumer, so
    allocating over the distinct ids is what the group means; each duplicate list seen is logged."""
    from java.util import ArrayList
    from jpype import JImplements, JOverride
    from org.apache.rocketmq.client.consumer.rebalance import AllocateMessageQueueAveragely

    averagely = AllocateMessageQueueAveragely()
    logged: set = set()

    @JImplements("org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy")
    class DistinctClients:
        @JOverride
        def allocate(self, group, current_cid, mq_all, cid_all):
            ids = [str(c) for c in cid_all]
            distinct = sorted(set(ids))
            if len(distinct) != len(ids):
                seen = (str(group), tuple(ids))
                if seen not in logged:
                    logged.add(seen)
                    print(f"hourglass: the broker lists group {group}'s clients as {ids}: allocating over the "
                          f"distinct {distinct}", file=sys.stderr, flush=True)
                cid_all = ArrayList(distinct)
            return averagely.allocate(group, current_cid, mq_all, cid_all)

        @JOverride
        def getName(self):
            return averagely.getName()

    return DistinctClients()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", action="append", required=True)
    ap.add_argument("--max-reconsume-times", type=int, default=16)
    ap.add_argument("--events", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--name", default="c")
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--mode", choices=MODES, default=CONCURRENTLY)
    ap.add_argument("--suspend-ms", type=int, default=DEFAULT_SUSPEND_MS)
    ap.add_argument("--instance", type=int, default=0)
    ap.add_argument("--consume-timeout", type=int, default=None, help="consumeTimeout, minutes (reference.timeout)")
    ap.add_argument("--pop-invisible-ms", type=int, default=None, help="mode pop: popInvisibleTime (reference.pop)")
    ap.add_argument("--restarted-after", default=None,
                    help="the replacement of a consumer that died (the cause): record its start once its JVM is up")
    return ap.parse_args(argv)


def make_consumer(args: argparse.Namespace, instance_tag: str):
    """The push consumer ``args`` describe and its plan follower, started; in a JVM already running
    (:func:`start_jvm`; a broadcasting consumer's offsets directory set). ``instance_tag``: what
    makes its client instance distinct from every other consumer's, also after a restart (its
    process id; in the consumer host, the host's and a counter): each consumer is a client of its
    own to the broker (its own client id and connections), never one of several groups of a client."""
    broadcasting = args.mode == BROADCASTING
    # a broadcasting instance is a judging unit of its own (reference.modes)
    unit = unit_group(args.group, args.instance) if broadcasting else args.group
    follower = PlanFollower(unit, Path(args.events), args.name, args.max_reconsume_times if args.mode == ORDERLY else None,
                            effective_timeout_min(args.consume_timeout))
    from org.apache.rocketmq.client.consumer import DefaultMQPushConsumer
    from org.apache.rocketmq.common.consumer import ConsumeFromWhere

    # the send-back hook where the client sends a LATER back (orderly suspends, broadcasting drops
    # it, POP changes its invisible time)
    hook = make_send_back_hook(follower) if args.mode == CONCURRENTLY else None
    consumer = DefaultMQPushConsumer(args.group, hook, make_allocation())
    consumer.setNamesrvAddr(args.namesrv)
    # a broadcasting instance keeps its client id across restarts: its offsets file is found by it
    consumer.setInstanceName(f"hg-{args.name}" if broadcasting else f"hg-{args.name}-{instance_tag}")
    if broadcasting:  # MessageModel moved package in 5.x: take the enum from the consumer's own value
        consumer.setMessageModel(type(consumer.getMessageModel()).BROADCASTING)
    consumer.setMaxReconsumeTimes(args.max_reconsume_times)
    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.setConsumeMessageBatchMaxSize(args.batch_size)
    if args.consume_timeout is not None:
        consumer.setConsumeTimeout(args.consume_timeout)
    consumer.setPollNameServerInterval(5000)
    consumer.setHeartbeatBrokerInterval(5000)
    if args.restarted_after:  # the outage lasts until now (the JVM's start), not until the spawn;
        with EventLog(Path(args.events)) as log:  # written before consuming: this consumer is the file's one writer
            log.write(consumer_fault("start", now_ms(), args.name, args.group, args.restarted_after))
    for topic in args.topic:
        consumer.subscribe(topic, "*")
    if args.mode == POP:  # the broker assigns and hands out the queues (its request mode POP: reference.pop)
        consumer.setClientRebalance(False)
        if args.pop_invisible_ms is not None:
            consumer.setPopInvisibleTime(args.pop_invisible_ms)
    if args.mode == ORDERLY:
        consumer.setSuspendCurrentQueueTimeMillis(args.suspend_ms)
        consumer.registerMessageListener(make_orderly_listener(follower))
    else:
        consumer.registerMessageListener(make_listener(follower, args.batch_size > 1, args.mode == POP))
    consumer.start()
    return consumer, follower


def stop_consumer(consumer, follower: PlanFollower) -> None:
    """The graceful stop: a held listener answers now (the shutdown does not wait for its timeout),
    then the client shuts down (its offsets committed, the group told it left)."""
    follower.stop_holding()
    consumer.shutdown()


def offsets_dir(log_dir: str) -> str:
    """Where a broadcasting consumer keeps its offsets (LocalFileOffsetStore)."""
    return str(Path(log_dir) / "offsets")


def set_offsets_dir(log_dir: str) -> None:
    """Before any broadcasting consumer starts: LocalFileOffsetStore reads its directory once, when its class loads."""
    from java.lang import System

    System.setProperty("rocketmq.client.localOffsetStoreDir", offsets_dir(log_dir))


def main() -> None:
    args = parse_args()
    chan = Channel()
    start_jvm(args.lib, args.log_dir, heap=("-Xms32m", "-Xmx256m"), quick_start=True, binary_headers=args.mode != POP)
    set_offsets_dir(args.log_dir)
    consumer, follower = make_consumer(args, str(os.getpid()))
    chan.write({"ready": True, "pid": os.getpid()})
    try:
        sys.stdin.read()  # the parent closes stdin (or dies) to ask for a graceful stop
    finally:
        stop_consumer(consumer, follower)
    exit_now(0)


if __name__ == "__main__":
    main()
