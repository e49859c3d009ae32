"""The client process: producer and admin of the official Java client, driven through JPype.

Run as ``python -m hourglass.adapters.rocketmq.client_proc --lib LIB --namesrv ADDR --log-dir DIR``; one per
system (one JVM per OS process). Requests and replies are JSON lines (stdin / original stdout),
each reply carries the request's ``id``; ``{"ok": false, "error": ...}`` on failure. Requests are
answered concurrently (:data:`REQUEST_WORKERS`), each as soon as it is done.

Commands:

- ``ping`` -> ``{}``
- ``members {}`` -> ``{"members": {name: {broker_id: addr}}}`` (every registered broker, slaves too)
- ``sync_state {controller, broker_name}`` -> ``{"master": addr, "in_sync": [addr...]}`` (5.x controller mode)
- ``route {topic}`` -> ``{"brokers": {name: addr}, "queues": n}`` (name-server route query)
- ``create_topic {topic, queues}`` -> ``{"brokers": [addr...]}`` on every broker of the cluster
- ``send {message, timeout_ms}`` -> one result; ``send_batch {messages, threads, timeout_ms}`` ->
  ``{"results": [...]}`` in request order, sent concurrently by ``threads`` Java threads. A message is ``{topic, key, body (latin-1 text), delay_level,
  timer {property: value}, plan}``; a result is ``{status, ts_ms, born_ms, msg_id, body_crc, broker, error,
  response_code}`` with
  status ``SEND_OK``, ``FAILED`` (certainly not stored) or ``UNKNOWN`` (timed out / not sure).
  The send loop itself is Java (``java/HgBatchSender.java``, compiled on first use by
  ``helpers``): a batch is one JPype call, so Python's GIL does not cap the send rate.
  The producer does not retry (``retryTimesWhenSendFailed=0``): a retried send would store a
  second copy the harness never asked for.
- ``read_dlq {group}`` -> ``{"messages": [dlq fields]}`` (pulled from ``%DLQ%group`` queue 0; a
  DLQ created write-only, as before 4.9.2, is made readable first)
- ``broker_status {addrs?}`` -> ``{"brokers": {addr: {key: value}}}`` (admin ``brokerStatus`` of every
  master, or of the brokers at ``addrs``)
- ``consume_stats {group, topics}`` -> ``{"queues": [{topic, broker, queue_id, consumer_offset,
  broker_offset}], "errors": [...]}`` (admin ``consumeStats`` per topic)
- ``shutdown``
"""

from __future__ import annotations

import argparse
import itertools
import zlib
import threading
from pathlib import Path

from hourglass.adapters.rocketmq.clientlink import NO_BROKER
from hourglass.adapters.rocketmq.helpers import helper_classes
from hourglass.adapters.rocketmq.jvm import KEEP_CHANNEL_ON_TIMEOUT, Channel, describe, exit_now, now_ms, serve_requests, start_jvm
from hourglass.reference.limits import CLIENT_MAX_MESSAGE_SIZE


#: how many requests the client process answers at once (the runs of a shared system, each with
#: at most one request in flight)
REQUEST_WORKERS = 32


class Client:
    def __init__(self, namesrv: str, instance: str):
        from org.apache.rocketmq.client.producer import DefaultMQProducer
        from org.apache.rocketmq.tools.admin import DefaultMQAdminExt

        self.namesrv = namesrv

        self.producer = DefaultMQProducer("hg_producer_" + instance)
        self.producer.setNamesrvAddr(namesrv)
        self.producer.setInstanceName("hg-producer-" + instance)
        self.producer.setRetryTimesWhenSendFailed(0)
        self.producer.setRetryTimesWhenSendAsyncFailed(0)
        self.producer.setPollNameServerInterval(5000)
        self.producer.setMaxMessageSize(CLIENT_MAX_MESSAGE_SIZE)
        # bodies go as they are: a compressed body at the broker's maxMessageSize would not be at it
        # (reference.limits: the broker checks the body it receives)
        self.producer.setCompressMsgBodyOverHowmuch(2**31 - 1)
        self.producer.start()
        self.admin = DefaultMQAdminExt()
        self.admin.setNamesrvAddr(namesrv)
        self.admin.setInstanceName("hg-admin-" + instance)
        self.admin.setAdminExtGroup("hg_admin_" + instance)
        self.admin.start()
        self._dlq_readers = itertools.count(1)  # each DLQ read's puller a client instance of its own
        self._senders: dict = {}
        self._senders_lock = threading.Lock()

    # -- admin ------------------------------------------------------------------------------
    def brokers(self) -> dict[str, str]:
        info = self.admin.examineBrokerClusterInfo()
        out = {}
        for name, data in info.getBrokerAddrTable().items():
            addr = data.getBrokerAddrs().get(0)
            if addr is not None:
                out[str(name)] = str(addr)
        return out

    def masters(self) -> dict[str, str]:
        """:meth:`brokers`, for a command that acts on every broker: none routed is an error."""
        out = self.brokers()
        if not out:
            raise RuntimeError(NO_BROKER)
        return out

    def members(self) -> dict[str, dict[str, str]]:
        """Every registered broker: name -> {brokerId: address} (masters are id 0)."""
        info = self.admin.examineBrokerClusterInfo()
        return {str(name): {str(i): str(a) for i, a in data.getBrokerAddrs().items()}
                for name, data in info.getBrokerAddrTable().items()}

    def sync_state(self, controller: str, broker_name: str) -> dict:
        """5.x controller mode (admin getInSyncStateData): the master's address and the addresses
        of the replicas in its sync state set."""
        from java.util import ArrayList

        names = ArrayList()
        names.add(broker_name)
        info = self.admin.getInSyncStateData(controller, names).getReplicasInfoTable().get(broker_name)
        if info is None:
            return {"master": None, "in_sync": []}
        return {"master": None if info.getMasterAddress() is None else str(info.getMasterAddress()),
                "in_sync": sorted(str(r.getBrokerAddress()) for r in info.getInSyncReplicas())}

    def route(self, topic: str) -> dict:
        route = self.admin.examineTopicRouteInfo(topic)
        brokers = {}
        for bd in route.getBrokerDatas():
            addr = bd.getBrokerAddrs().get(0)
            if addr is not None:
                brokers[str(bd.getBrokerName())] = str(addr)
        queues = {str(q.getBrokerName()): {"read": int(q.getReadQueueNums()), "write": int(q.getWriteQueueNums()),
                                           "perm": int(q.getPerm())} for q in route.getQueueDatas()}
        return {"brokers": brokers, "queues": queues}

    def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> dict:
        from org.apache.rocketmq.common import TopicConfig

        addrs = list(self.masters().values())
        for addr in addrs:
            self.admin.createAndUpdateTopicConfig(addr, TopicConfig(topic, queues, queues, perm))
        return {"brokers": addrs}

    def create_group(self, group: str, retry_max_times: int) -> dict:
        """Admin createAndUpdateSubscriptionGroupConfig on every broker: the group with its retryMaxTimes."""
        from jpype import JClass

        config = None
        for name in ("org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig",  # 5.x
                     "org.apache.rocketmq.common.subscription.SubscriptionGroupConfig"):  # 4.9.x
            try:
                config = JClass(name)()
                break
            except Exception:  # noqa: BLE001 - not this client's package: try the other
                continue
        if config is None:
            raise RuntimeError("this client has no SubscriptionGroupConfig class")
        config.setGroupName(group)
        config.setRetryMaxTimes(retry_max_times)
        addrs = list(self.masters().values())
        for addr in addrs:
            self.admin.createAndUpdateSubscriptionGroupConfig(addr, config)
        return {"brokers": addrs}

    def set_pop_mode(self, topic: str, group: str) -> dict:
        """Admin setMessageRequestMode(POP) on every broker for the group and topic (5.x:
        QueryAssignmentProcessor.setMessageRequestMode; both must exist on the broker)."""
        from org.apache.rocketmq.common.message import MessageRequestMode

        addrs = list(self.masters().values())
        for addr in addrs:
            self.admin.setMessageRequestMode(addr, topic, group, MessageRequestMode.POP, 0, 5000)
        return {"brokers": addrs}

    def start_offsets(self, topic: str, group: str) -> dict:
        """Commit ``group``'s offset on every queue of ``topic`` at the queue's first message (admin
        updateConsumeOffset), so its first pop starts there: the proxy pops with ConsumeInitMode.MAX
        (ReceiveMessageActivity), and before 5.2.0 a group with no offset starts at the queue's last
        message (PopMessageProcessor.getPopOffset: max - 1), skipping what was stored before."""
        addrs = self.masters()
        stats = self.admin.examineTopicStats(topic).getOffsetTable()
        for mq in stats.keySet():
            self.admin.updateConsumeOffset(addrs[str(mq.getBrokerName())], group, mq, stats.get(mq).getMinOffset())
        return {"queues": int(stats.size())}

    def broker_config(self) -> dict:
        """Admin getBrokerConfig of every broker: address -> {key: value} as the broker reports it."""
        out = {}
        for addr in self.masters().values():
            props = self.admin.getBrokerConfig(addr)
            out[addr] = {str(k): str(props.get(k)) for k in props.stringPropertyNames()}
        return {"brokers": out}

    def broker_status(self, addrs: list[str] | None = None) -> dict:
        """Admin brokerStatus of every master, or of the brokers at ``addrs`` (a slave too)."""
        out = {}
        for addr in addrs if addrs is not None else self.brokers().values():
            table = self.admin.fetchBrokerRuntimeStats(addr).getTable()
            out[addr] = {str(k): str(v) for k, v in table.items()}
        return {"brokers": out}

    def consume_stats(self, group: str, topics: list[str]) -> dict:
        """Admin consumeStats of ``group`` per topic: every queue's committed and max offset (a
        topic the broker cannot answer for goes to ``errors``)."""
        queues, errors = [], []
        for topic in topics:
            try:
                table = self.admin.examineConsumeStats(group, topic).getOffsetTable()
            except Exception as e:  # noqa: BLE001 - one topic's answer does not void the others
                errors.append(f"{topic}: {describe(e)}"[:300])
                continue
            for mq, w in table.items():
                queues.append({"topic": str(mq.getTopic()), "broker": str(mq.getBrokerName()), "queue_id": int(mq.getQueueId()),
                               "consumer_offset": int(w.getConsumerOffset()), "broker_offset": int(w.getBrokerOffset())})
        return {"queues": queues, "errors": errors}

    # -- producer ---------------------------------------------------------------------------
    def _sender(self, threads: int):
        """The batch sender of ``threads`` threads (its ``sendBatch`` takes concurrent calls)."""
        with self._senders_lock:
            sender = self._senders.get(threads)
            if sender is None:
                import jpype

                # by name: ``from hourglass import ...`` would be this project's Python package
                HgBatchSender = jpype.JClass("hourglass.HgBatchSender")
                sender = self._senders[threads] = HgBatchSender(self.producer, threads)
            return sender

    def send_batch(self, messages: list[dict], threads: int = 8, timeout_ms: int = 3000) -> dict:
        """One call into Java for the whole batch (``java/HgBatchSender.java``): the per-message
        work stays out of Python, which would otherwise cap the rate through the GIL."""
        from jpype import JArray, JInt, JString

        bodies = [m.get("body", "").encode("latin-1") for m in messages]
        lines = self._sender(max(1, threads)).sendBatch(
            JArray(JString)([m["topic"] for m in messages]), JArray(JString)([m["key"] for m in messages]),
            b"".join(bodies), JArray(JInt)([len(b) for b in bodies]),
            JArray(JInt)([int(m.get("delay_level") or 0) for m in messages]),
            JArray(JString)(["\n".join(f"{k}={v}" for k, v in (m.get("timer") or {}).items()) for m in messages]),
            JArray(JString)([",".join(m.get("plan") or ()) for m in messages]), int(timeout_ms))
        return {"results": [_parse_result(str(line)) for line in lines]}

    def send(self, m: dict, timeout_ms: int = 3000) -> dict:
        return self.send_batch([m], 1, timeout_ms)["results"][0]

    # -- DLQ --------------------------------------------------------------------------------
    def read_dlq(self, group: str) -> dict:
        from org.apache.rocketmq.client.consumer import DefaultMQPullConsumer, PullStatus
        from org.apache.rocketmq.common.message import MessageClientIDSetter, MessageQueue

        topic = "%DLQ%" + group
        try:
            route = self.route(topic)
        except Exception as e:
            text = describe(e)
            if ("route" in text.lower() and ("not exist" in text.lower() or "not found" in text.lower())) \
                    or "No topic route info" in text or "TOPIC_NOT_EXIST" in text:  # an absent DLQ is an empty DLQ
                return {"messages": [], "note": f"no {topic} yet"}
            raise
        for broker_name, q in route["queues"].items():
            if not q["perm"] & 4:  # before 4.9.2 the DLQ is created write-only
                addr = route["brokers"][broker_name]
                from org.apache.rocketmq.common import TopicConfig

                self.admin.createAndUpdateTopicConfig(addr, TopicConfig(topic, q["read"] or 1, q["write"] or 1, 6))
        messages = []
        # a name of its own, short whatever the group's length (5.5.0's client takes 120 characters),
        # and a client instance of its own: reads of other groups go on beside it
        puller = DefaultMQPullConsumer(f"hg_dlq_reader_{zlib.crc32(group.encode()):08x}")
        puller.setNamesrvAddr(self.producer.getNamesrvAddr())
        puller.setInstanceName(f"hg-dlq-{now_ms()}-{next(self._dlq_readers)}")
        puller.start()
        try:
            for broker_name in route["brokers"]:
                mq = MessageQueue(topic, broker_name, 0)
                offset = 0
                while True:
                    res = puller.pull(mq, "*", offset, 64, 5000)
                    if res.getPullStatus() != PullStatus.FOUND:
                        break
                    for msg in res.getMsgFoundList():
                        uniq = MessageClientIDSetter.getUniqID(msg)
                        messages.append({
                            "key": str(msg.getKeys()), "group": group,
                            "msg_id": str(uniq if uniq is not None else msg.getMsgId()),
                            "reconsume_times": int(msg.getReconsumeTimes()),
                            "store_ms": int(msg.getStoreTimestamp()),
                            "queue_offset": int(msg.getQueueOffset()),
                            "commit_log_offset": int(msg.getCommitLogOffset()),
                        })
                    offset = int(res.getNextBeginOffset())
        finally:
            puller.shutdown()
        return {"messages": messages}

    def shutdown(self) -> None:
        for sender in self._senders.values():
            sender.shutdown()
        for closer in (self.producer.shutdown, self.admin.shutdown):
            try:
                closer()
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass


def _parse_result(line: str) -> dict:
    status, ts_ms, born_ms, msg_id, crc, broker, queue_id, code, error = line.split("\t", 8)
    return {"status": status, "ts_ms": int(ts_ms), "born_ms": int(born_ms), "msg_id": msg_id or None,
            "body_crc": int(crc), "broker": broker or None, "queue_id": int(queue_id) if queue_id else None,
            "error": error or None,
            "response_code": int(code) if code else None}


def serve(client: Client, chan: Channel) -> None:
    handlers = {
        "ping": lambda a: {},
        "route": lambda a: client.route(a["topic"]),
        "brokers": lambda a: {"brokers": client.brokers()},
        "members": lambda a: {"members": client.members()},
        "sync_state": lambda a: client.sync_state(a["controller"], a["broker_name"]),
        "create_topic": lambda a: client.create_topic(a["topic"], int(a.get("queues", 4))),
        "create_group": lambda a: client.create_group(a["group"], int(a["retry_max_times"])),
        "set_pop_mode": lambda a: client.set_pop_mode(a["topic"], a["group"]),
        "start_offsets": lambda a: client.start_offsets(a["topic"], a["group"]),
        "send": lambda a: client.send(a["message"], int(a.get("timeout_ms", 3000))),
        "send_batch": lambda a: client.send_batch(a["messages"], int(a.get("threads", 8)), int(a.get("timeout_ms", 3000))),
        "read_dlq": lambda a: client.read_dlq(a["group"]),
        "broker_status": lambda a: client.broker_status(a.get("addrs")),
        "broker_config": lambda a: client.broker_config(),
        "consume_stats": lambda a: client.consume_stats(a["group"], list(a["topics"])),
    }

    def error(req: dict, e: BaseException) -> str:
        target = ", ".join(req.get("addrs") or ()) or f"the name server {client.namesrv} or a broker it routes to"
        return describe(e, target)

    # the runs sharing a system wait for none but their own (a DLQ read or a topic's creation
    # takes a broker's round trips)
    serve_requests(chan, handlers, REQUEST_WORKERS, error)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--instance", default="hg")
    args = ap.parse_args()
    chan = Channel()
    helpers = helper_classes(Path(args.lib))
    start_jvm(args.lib, args.log_dir, heap=("-Xms64m", "-Xmx512m"), extra_classpath=(str(helpers),),
              extra_opts=(KEEP_CHANNEL_ON_TIMEOUT,))
    client = Client(args.namesrv, args.instance)
    chan.write({"id": None, "ok": True, "hello": True})
    try:
        serve(client, chan)
    finally:
        client.shutdown()
    exit_now(0)


if __name__ == "__main__":
    main()
