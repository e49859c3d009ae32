"""A few RocketMQ remoting requests spoken from Python, for the container runtime's tests.

They check that a name server or broker in a container *answers* (an application round trip, not
a TCP connect: a paused broker still accepts connections) and that a message sent before a
kill -9 is still in the store afterwards, without the JPype client. Frame: int total length,
int (serialize type << 24 | header length), JSON header, body (``RemotingCommand.encode``).
"""

from __future__ import annotations

import json
import socket
import struct
import time

GET_ROUTEINFO_BY_TOPIC = 105  # RequestCode; name server
SEND_MESSAGE = 10  # broker
GET_MAX_OFFSET = 30
VIEW_MESSAGE_BY_ID = 33
GET_BROKER_CONFIG = 26
SUCCESS = 0


class NoAnswer(RuntimeError):
    pass


def _read(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise NoAnswer("connection closed mid-answer")
        buf += chunk
    return buf


def request(addr: str, code: int, ext: dict | None = None, body: bytes = b"",
            timeout_s: float = 3.0) -> tuple[dict, bytes]:
    """One request; the answer's header and body. :class:`NoAnswer` when none comes in time."""
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": code, "language": "JAVA", "version": 395, "opaque": 1, "flag": 0,
                         "extFields": {k: str(v) for k, v in (ext or {}).items()}}).encode()
    frame = struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(frame)
            (length,) = struct.unpack(">i", _read(sock, 4))
            data = _read(sock, length)
    except OSError as e:  # refused, reset, timed out
        raise NoAnswer(f"{addr}: {type(e).__name__}: {e}") from None
    header_len = struct.unpack(">i", data[:4])[0] & 0xFFFFFF
    return json.loads(data[4:4 + header_len]), data[4 + header_len:]


def answers(addr: str, code: int, ext: dict | None = None, timeout_s: float = 2.0) -> bool:
    try:
        return request(addr, code, ext, timeout_s=timeout_s)[0].get("code") == SUCCESS
    except NoAnswer:
        return False


def wait_until(what: str, check, timeout_s: float, on_timeout=lambda: "") -> float:
    """Poll ``check`` (each call bounded by its own request timeout) until true; seconds taken."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"{what}: no answer within {timeout_s:.0f} s\n{on_timeout()}")


def send(broker_addr: str, topic: str, body: bytes) -> dict:
    """SEND_MESSAGE to queue 0 (the topic is auto-created from TBW102); the answer's fields
    (``msgId`` = broker address + commit-log offset, ``queueOffset``)."""
    ext = {"producerGroup": "HG_CONTAINER_TEST", "topic": topic, "defaultTopic": "TBW102",
           "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0, "bornTimestamp": int(time.time() * 1000),
           "flag": 0, "properties": "", "reconsumeTimes": 0, "unitMode": "false", "batch": "false"}
    header, _ = request(broker_addr, SEND_MESSAGE, ext, body)
    if header.get("code") != SUCCESS:
        raise AssertionError(f"SEND_MESSAGE to {broker_addr}: expected code 0, found {header}")
    return header["extFields"]


def commit_log_offset(msg_id: str) -> int:
    return int(msg_id[-16:], 16)


def stored_message(broker_addr: str, offset: int) -> bytes:
    header, body = request(broker_addr, VIEW_MESSAGE_BY_ID, {"offset": offset})
    if header.get("code") != SUCCESS:
        raise AssertionError(f"VIEW_MESSAGE_BY_ID {offset} at {broker_addr}: expected code 0, found {header}")
    return body


def max_offset(broker_addr: str, topic: str, queue_id: int = 0) -> int:
    header, _ = request(broker_addr, GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
    if header.get("code") != SUCCESS:
        raise AssertionError(f"GET_MAX_OFFSET {topic}/{queue_id}: expected code 0, found {header}")
    return int(header["extFields"]["offset"])
