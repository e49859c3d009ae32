"""The consumer host: many push consumers of the official Java client in one process and one JVM.

A shared system runs the consumers of a dozen scenarios at once; a JVM of its own for each (as
:mod:`consumer_proc` gives one) cost a 2-core host about twenty JVMs beside the broker under test.
The host runs every such consumer in one JVM, each exactly as :mod:`consumer_proc` runs it
(:func:`consumer_proc.make_consumer`: its own client instance, so its own client id and
connections to the broker; its own plan follower and events file).

What a host cannot give is a consumer's death alone: a ``CRASH`` answer ends its process, and the
broker must see what it sees of a dead client (its connections dropped, no unregister, its offsets
not committed: ``ClientHousekeepingService.doChannelCloseEvent`` -> ``ConsumerManager``), which
only the end of a process gives faithfully. So a group that a plan CRASHes, a group of a scenario
whose faults act on its consumers, and a gRPC group run in processes of their own (the harness
decides: ``ConsumerSpec.hosted``); a host is killed or paused only as a whole.

Run as ``python -m hourglass.adapters.rocketmq.consumer_host --lib LIB --log-dir DIR [--pop]``
(``--pop``: the JVM of POP consumers, without binary request headers: ``jvm.start_jvm``). It prints
``{"ok": true, "pid": P}`` once its JVM is up, then takes JSON lines on stdin, each answered with
its ``id`` (concurrently: a slow start holds up no other request):

- ``add {argv}`` -> ``{"ready": true}``: a consumer started, ``argv`` as ``consumer_proc`` takes it;
- ``stop {name}`` -> ``{}``: that consumer stopped gracefully (``consumer_proc.stop_consumer``);
- ``{"ok": false, "error": ...}`` on failure (``jvm.serve_requests``). At the end of stdin (or a
  ``shutdown``) every consumer stops gracefully and the process exits.
"""

from __future__ import annotations

import argparse
import itertools
import os
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor

from hourglass.adapters.rocketmq.consumer_proc import make_consumer, parse_args, set_offsets_dir, stop_consumer
from hourglass.adapters.rocketmq.jvm import Channel, exit_now, serve_requests, start_jvm

#: how many requests the host answers at once
REQUEST_WORKERS = 16
#: the host's heap: a consumer's own JVM has 256 MB and uses a tenth of it
HOST_HEAP = ("-Xms64m", "-Xmx768m")


class Host:
    def __init__(self):
        self.consumers: dict[str, tuple] = {}
        self._lock = threading.Lock()
        self._tags = itertools.count(1)

    def add(self, argv: list[str]) -> dict:
        args = parse_args(argv)
        with self._lock:
            if args.name in self.consumers:
                raise RuntimeError(f"consumer {args.name!r} is already running in this host")
            self.consumers[args.name] = None  # starting
            tag = f"{os.getpid()}h{next(self._tags)}"
        try:
            running = make_consumer(args, tag)
        except BaseException:
            with self._lock:
                del self.consumers[args.name]
            raise
        with self._lock:
            self.consumers[args.name] = running
        return {"ready": True}

    def stop(self, name: str) -> dict:
        with self._lock:
            if self.consumers.get(name) is None:
                raise RuntimeError(f"no consumer {name!r} running in this host" +
                                   (" (it is starting)" if name in self.consumers else ""))
            running = self.consumers.pop(name)
        stop_consumer(*running)
        return {}

    def stop_all(self) -> None:
        with self._lock:
            names = [n for n, c in self.consumers.items() if c is not None]
        with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:  # shutdowns wait on the broker: at once
            list(pool.map(self._stop_quietly, names))

    def _stop_quietly(self, name: str) -> None:
        try:
            self.stop(name)
        except Exception:  # noqa: BLE001 - the others still stop; the log has it
            traceback.print_exc()

    @staticmethod
    def error(request: dict, e: BaseException) -> str:
        traceback.print_exception(e)  # answered, the host goes on; its log has the trace
        return f"{type(e).__name__}: {e}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--pop", action="store_true", help="the JVM of POP consumers (no binary request headers)")
    args = ap.parse_args()
    chan = Channel()
    start_jvm(args.lib, args.log_dir, heap=HOST_HEAP, quick_start=True, binary_headers=not args.pop)
    set_offsets_dir(args.log_dir)
    host = Host()
    chan.write({"ok": True, "pid": os.getpid()})
    try:  # requests at once: a consumer's start takes seconds
        serve_requests(chan, {"add": lambda r: host.add(list(r["argv"])), "stop": lambda r: host.stop(str(r["name"]))},
                       REQUEST_WORKERS, host.error)
    finally:  # the end of stdin: the parent asks for a graceful stop (or died)
        host.stop_all()
    exit_now(0)


if __name__ == "__main__":
    main()
