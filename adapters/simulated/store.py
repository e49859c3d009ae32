"""The simulated broker's message store: a commit log and its consume queues.

A :class:`StoredMessage` is one stored copy: a re-put, a retry, a DLQ entry are new copies with
their own ``commit_log_offset``; what is carried over (key, body, msg_id, born time, plan) follows
``ScheduleMessageService.messageTimeup`` and ``SendMessageProcessor.asyncConsumerSendMsgBack``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

#: Bytes a stored message takes in the commit log beyond its body (the header, roughly).
HEADER_BYTES = 200


@dataclass(frozen=True)
class StoredMessage:
    commit_log_offset: int
    queue_topic: str  # the topic of the queue it sits in (SCHEDULE_TOPIC_XXXX, %RETRY%g, ...)
    queue_id: int
    queue_offset: int
    topic: str  # the application topic (REAL_TOPIC / RETRY_TOPIC restored)
    key: str
    body: bytes
    body_crc: int
    msg_id: str
    born_ms: int
    store_ms: int
    reconsume_times: int = 0
    plan: tuple[str, ...] = ()
    delay_level: int = 0  # schedule queue entries: the (clamped) level
    deliver_ms: int = 0  # schedule/timer entries: when due (the consume queue's tags code)
    real_topic: str = ""  # schedule/timer entries: where the re-put goes
    real_queue_id: int = 0


class MessageStore:
    """Commit log plus consume queues: ``queues[(topic, queue_id)]`` is a list of copies."""

    def __init__(self) -> None:
        self.next_commit_log_offset = 0
        self.queues: dict[tuple[str, int], list[StoredMessage]] = {}
        self.queue_counts: dict[str, int] = {}

    def create_topic(self, topic: str, queues: int) -> None:
        if queues < 1:
            raise ValueError(f"topic {topic!r}: queues must be >= 1, found {queues}")
        self.queue_counts.setdefault(topic, queues)
        for q in range(self.queue_counts[topic]):
            self.queues.setdefault((topic, q), [])

    def queue(self, topic: str, queue_id: int) -> list[StoredMessage]:
        return self.queues.setdefault((topic, queue_id), [])

    def append(self, proto: StoredMessage, queue_topic: str, queue_id: int, store_ms: int) -> StoredMessage:
        """Store a copy of ``proto`` in ``(queue_topic, queue_id)`` at ``store_ms``."""
        self.queue_counts.setdefault(queue_topic, queue_id + 1)
        q = self.queue(queue_topic, queue_id)
        msg = replace(proto, commit_log_offset=self.next_commit_log_offset, queue_topic=queue_topic,
                      queue_id=queue_id, queue_offset=len(q), store_ms=store_ms)
        self.next_commit_log_offset += HEADER_BYTES + len(proto.body)
        q.append(msg)
        return msg
