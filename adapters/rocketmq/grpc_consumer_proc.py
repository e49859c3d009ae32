"""A gRPC consumer process: one ``SimpleConsumer`` or ``PushConsumer`` of the 5.x gRPC Java client
(:data:`~adapters.rocketmq.provision.GRPC_CLIENT_ARTIFACT`) talking to the system's proxy, following
each message's plan like :mod:`adapters.rocketmq.consumer_proc` (same arguments, same ``ready``
line, same events file, same CRASH exit), in its own OS process.

Run as ``python -m hourglass.adapters.rocketmq.grpc_consumer_proc --grpc-lib DIR --proxy ADDR --lib LIB
--namesrv ADDR --group G --topic T --mode grpc-simple|grpc-push --events FILE --log-dir DIR``.

A delivery is answered by its attempt's own plan entry (reference.pop.pop_answer; the attempt is
``getDeliveryAttempt() - 1``, GrpcConverter.buildMessage). ``grpc-simple``: ``receive`` with the
invisible duration (``--pop-invisible-ms``), ``ack`` an OK, nothing for a LATER (the invisible time
runs out: the model's anchor is the pop). ``grpc-push``: the listener answers ``SUCCESS`` or
``FAILURE`` (the client then changes the invisible time by the server's retry policy,
ProcessQueueImpl.nackMessage). ``CRASH`` records the death and exits like the remoting consumer.

What the gRPC client does not hand out is read where it is: the pop time from the receipt handle
(ReceiptHandle.encode: ``startOffset popTime invisibleTime reviveQueueId topicType brokerName
queueId offset commitLogOffset``), the stored copy (its topic, queue, offsets and store time) from
the broker by its commit-log offset (an admin ``viewMessage`` through the remoting tools of the
system's own version, on the same JVM: the gRPC client's dependencies are shaded).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import zlib
from pathlib import Path

from hourglass.adapters.rocketmq.consumer_proc import PlanFollower
from hourglass.adapters.rocketmq.jvm import Channel, describe, exit_now, now_ms, start_jvm
from hourglass.adapters.rundir import EventLog
from hourglass.reference.contract import BODY_CRC_PROPERTY, PLAN_PROPERTY, consumer_fault
from hourglass.reference.pop import GRPC_PUSH, GRPC_SIMPLE, mode_invisible_ms
from hourglass.reference.plans import LATER, OK

#: how long a receive waits for messages (the proxy holds it at most GRPC_LONG_POLL_MS)
AWAIT_S = 10
#: how many messages one receive may take
RECEIVE_BATCH = 16
#: how long a delivery's stored copy is looked for (an admin viewMessage by its commit-log offset)
VIEW_TIMEOUT_S = 5.0


def receipt_fields(handle: str) -> dict[str, object]:
    """The fields of a receipt handle the harness uses (ReceiptHandle.encode); {} when it is not one."""
    parts = str(handle).split(" ")
    if len(parts) < 9 or not all(parts[i].lstrip("-").isdigit() for i in (1, 2, 6, 7, 8)):
        return {}
    return {"pop_ms": int(parts[1]), "invisible_ms": int(parts[2]), "broker": parts[5], "queue_id": int(parts[6]),
            "queue_offset": int(parts[7]), "commit_log_offset": int(parts[8])}


class StoredCopies:
    """The stored copy of a delivery, read from its broker by commit-log offset (DefaultMQAdminExt
    .viewMessage with an offset message id, MessageDecoder.createMessageId)."""

    def __init__(self, namesrv: str, name: str):
        from org.apache.rocketmq.tools.admin import DefaultMQAdminExt

        self.admin = DefaultMQAdminExt(5000)
        self.admin.setNamesrvAddr(namesrv)
        self.admin.setInstanceName(f"hg-grpc-view-{name}-{os.getpid()}")
        self.admin.start()
        self.addrs: dict[str, str] = {}

    def _addr(self, topic: str, broker: str, refresh: bool) -> str | None:
        if refresh or broker not in self.addrs:
            route = self.admin.examineTopicRouteInfo(topic)
            for data in route.getBrokerDatas():
                addr = data.getBrokerAddrs().get(0)  # MixAll.MASTER_ID
                if addr is not None:
                    self.addrs[str(data.getBrokerName())] = str(addr)
        return self.addrs.get(broker)

    def view(self, topic: str, broker: str, commit_log_offset: int):
        """The MessageExt at ``commit_log_offset`` on ``broker``, or None after :data:`VIEW_TIMEOUT_S`."""
        from java.net import InetSocketAddress
        from org.apache.rocketmq.common.message import MessageDecoder

        deadline, refresh = time.monotonic() + VIEW_TIMEOUT_S, False
        while True:
            try:
                addr = self._addr(topic, broker, refresh)
                if addr is not None:
                    host, port = addr.rsplit(":", 1)
                    msg_id = MessageDecoder.createMessageId(InetSocketAddress(host, int(port)), commit_log_offset)
                    return self.admin.viewMessage(topic, msg_id)
            except Exception as e:  # noqa: BLE001 - a Java exception: look again until the deadline
                print(f"hourglass: viewMessage {broker}@{commit_log_offset}: {describe(e)}", file=sys.stderr, flush=True)
            if time.monotonic() > deadline:
                return None
            refresh = True
            time.sleep(0.2)  # between looks at a broker that did not answer

    def close(self) -> None:
        self.admin.shutdown()


class GrpcFollower(PlanFollower):
    """The plan follower of a gRPC consumer: deliveries are MessageViews."""

    def __init__(self, *args, copies: StoredCopies, **kwargs):
        super().__init__(*args, **kwargs)
        self.copies = copies
        self.ack = None  # a SimpleConsumer's ack (run_simple); a PushConsumer's client acks by itself

    def answering(self, event: dict, view) -> None:
        """A SimpleConsumer acks an OK before its event is written, which records a refused ack
        (``ack_failed``: the proxy's error; the broker revives the copy)."""
        if self.ack is None or event["outcome"] != OK:
            return
        try:
            self.ack(view)
        except Exception as e:  # noqa: BLE001 - a Java exception: its receipt refused, or the proxy down
            event["ack_failed"] = describe(e)
            print(f"hourglass: ack {view.getMessageId()}: {describe(e)}", file=sys.stderr, flush=True)

    def _event(self, view, _queue) -> dict:
        keys = list(view.getKeys())
        body = bytes(view.getBody().array()) if view.getBody().hasArray() else _bytes(view.getBody())
        receipt = receipt_fields(view.getReceiptHandle())
        props = view.getProperties()
        topic = str(view.getTopic())
        event = {"type": "deliver", "ts_ms": None, "key": str(keys[0]) if keys else "", "group": self.group,
                 "topic": topic, "queue_id": int(view.getMessageQueue().getQueueId()),
                 "queue_offset": int(view.getOffset()), "queue_topic": topic,
                 "broker": str(view.getMessageQueue().getBroker().getName()),
                 "commit_log_offset": int(receipt.get("commit_log_offset", -1)), "body_crc": zlib.crc32(body),
                 "msg_id": str(view.getMessageId()), "reconsume_times": int(view.getDeliveryAttempt()) - 1,
                 "born_ms": int(view.getBornTimestamp()), "store_ms": None}
        if receipt:
            event["pop_ms"] = receipt["pop_ms"]
            stored = self.copies.view(topic, str(receipt["broker"]), int(receipt["commit_log_offset"]))
            if stored is not None:  # the popped copy: a revived one is in the POP retry topic
                event.update(queue_topic=str(stored.getTopic()), queue_id=int(stored.getQueueId()),
                             queue_offset=int(stored.getQueueOffset()), store_ms=int(stored.getStoreTimestamp()))
        if event["store_ms"] is None:  # not read: stored before it was popped (an upper bound)
            event["store_ms"] = int(receipt.get("pop_ms", now_ms()))
            print(f"hourglass: {event['key']}: no stored copy read; its pop time stands for its store time",
                  file=sys.stderr, flush=True)
        sent_crc = props.get(BODY_CRC_PROPERTY)
        if sent_crc is not None and str(sent_crc) != str(event["body_crc"]):
            event["sent_body_crc"] = int(str(sent_crc))
        return event

    def _cursor(self, key: str, view):
        prop = view.getProperties().get(PLAN_PROPERTY)
        plan = tuple(p.strip() for p in str(prop).split(",")) if prop is not None and str(prop) else ()
        return plan, None

    def pop_times(self, view) -> tuple[int | None, int | None]:
        receipt = receipt_fields(view.getReceiptHandle())
        return receipt.get("pop_ms"), receipt.get("invisible_ms")


def _bytes(buf) -> bytes:
    dup = buf.duplicate()
    out = bytearray(dup.remaining())
    for i in range(len(out)):
        out[i] = dup.get() & 0xFF
    return bytes(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grpc-lib", required=True, help="the gRPC Java client's jars")
    ap.add_argument("--proxy", required=True, help="the proxy's gRPC endpoint, host:port")
    ap.add_argument("--tls", action="store_true", help="the proxy takes TLS only (adapters.rocketmq.proxy.tls_only)")
    ap.add_argument("--lib", required=True, help="the system's own jars (its admin tools)")
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", action="append", required=True)
    ap.add_argument("--mode", choices=(GRPC_SIMPLE, GRPC_PUSH), required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--name", default="c")
    ap.add_argument("--pop-invisible-ms", type=int, default=None, help="grpc-simple: the receive's invisible duration")
    ap.add_argument("--restarted-after", default=None)
    return ap.parse_known_args(argv)[0]  # the remoting consumer's other options mean nothing here


def _client(args):
    from java.time import Duration
    from org.apache.rocketmq.client.apis import ClientConfiguration, ClientServiceProvider
    from org.apache.rocketmq.client.apis.consumer import FilterExpression, FilterExpressionType

    provider = ClientServiceProvider.loadService()
    config = ClientConfiguration.newBuilder().setEndpoints(args.proxy).enableSsl(args.tls) \
        .setRequestTimeout(Duration.ofSeconds(10)).build()
    from java.util import HashMap

    subs = HashMap()
    for topic in args.topic:
        subs.put(topic, FilterExpression("*", FilterExpressionType.TAG))
    return provider, config, subs


def run_simple(args, follower: GrpcFollower, stop: threading.Event):
    """Receive and answer until ``stop``: OK acks, anything else lets the invisible time run out."""
    from java.time import Duration

    provider, config, subs = _client(args)
    consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(config).setConsumerGroup(args.group) \
        .setAwaitDuration(Duration.ofSeconds(AWAIT_S)).setSubscriptionExpressions(subs).build()
    invisible = Duration.ofMillis(mode_invisible_ms(GRPC_SIMPLE, args.pop_invisible_ms))
    follower.ack = consumer.ack

    def loop():
        while not stop.is_set():
            try:
                views = list(consumer.receive(RECEIVE_BATCH, invisible))
            except Exception as e:  # noqa: BLE001 - a proxy restarting (UNAVAILABLE): receive again
                if not stop.is_set():
                    print(f"hourglass: receive: {describe(e)}", file=sys.stderr, flush=True)
                    stop.wait(1.0)  # before the next receive from a proxy that did not answer
                continue
            for view in views:  # an OK is acked as it is recorded (GrpcFollower.answering)
                follower.on_pop(view, None)

    thread = threading.Thread(target=loop, name="hg-grpc-simple", daemon=True)
    thread.start()
    return consumer, thread


def run_push(args, follower: GrpcFollower):
    from jpype import JImplements, JOverride
    from org.apache.rocketmq.client.apis.consumer import ConsumeResult

    provider, config, subs = _client(args)

    @JImplements("org.apache.rocketmq.client.apis.consumer.MessageListener")
    class Listener:
        @JOverride
        def consume(self, view):
            answer, _ = follower.on_pop(view, None)
            return ConsumeResult.FAILURE if answer == LATER else ConsumeResult.SUCCESS

    return provider.newPushConsumerBuilder().setClientConfiguration(config).setConsumerGroup(args.group) \
        .setSubscriptionExpressions(subs).setMessageListener(Listener()).build()


def main() -> None:
    args = parse_args()
    chan = Channel()
    start_jvm(args.lib, args.log_dir, heap=("-Xms32m", "-Xmx256m"), quick_start=True, binary_headers=False,
              extra_classpath=(str(Path(args.grpc_lib) / "*"),))
    from java.lang import System

    System.setProperty("rocketmq.log.root", args.log_dir)  # the gRPC client's own log (ClientLogger)
    copies = StoredCopies(args.namesrv, args.name)
    follower = GrpcFollower(args.group, Path(args.events), args.name, copies=copies)
    if args.restarted_after:
        with EventLog(Path(args.events)) as log:
            log.write(consumer_fault("start", now_ms(), args.name, args.group, args.restarted_after))
    stop = threading.Event()
    thread = None
    if args.mode == GRPC_SIMPLE:
        consumer, thread = run_simple(args, follower, stop)
    else:
        consumer = run_push(args, follower)
    chan.write({"ready": True, "pid": os.getpid()})
    try:
        sys.stdin.read()  # the parent closes stdin (or dies) to ask for a graceful stop
    finally:
        stop.set()
        follower.stop_holding()
        if thread is not None:
            thread.join(AWAIT_S + 5)
        consumer.close()
        copies.close()
    exit_now(0)


if __name__ == "__main__":
    main()
