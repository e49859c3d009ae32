"""SIGTERM while a client call waits on a broker that does not answer ends the harness in seconds.

Seen with ``--runtime external`` after the cluster's broker died: the harness took about 40 s to
exit, its signal cleanup closing the client process gracefully, which first waited for the call in
flight to time out. The client process here is a stand-in that answers its start and then never
answers again (what a client whose broker is gone does for a call's whole timeout); no broker runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from hourglass.reports.verdict import BROKEN, EXIT_CODES

ROOT = Path(__file__).resolve().parents[2]
#: The call in flight would wait this long: far beyond anything the test waits for the exit.
CALL_TIMEOUT_S = 3600

SILENT_CLIENT = """
import sys
print('{"ok": true}', flush=True)
for line in sys.stdin:  # reads every request, answers none
    pass
"""

HARNESS = textwrap.dedent("""
    import sys, threading
    from pathlib import Path
    from hourglass.adapters.rocketmq.clientlink import ClientProcess, _RequestProcess
    from hourglass.reports.command import Parser, run_command

    class SilentClient(ClientProcess):
        def __init__(self, log_dir):
            _RequestProcess.__init__(self, [{client!r}], log_dir / "client-process.log", "client process (silent)", 60)

    def run(args):
        client = SilentClient(Path(args.log_dir))
        call = threading.Thread(target=lambda: client.request("send", timeout_s={timeout}), daemon=True)
        call.start()  # a job thread's call, as the batch makes them; the main thread waits
        print("calling", flush=True)
        call.join()
        return 0

    parser = Parser(prog="fake-harness")
    parser.add_argument("--log-dir")
    parser.set_defaults(fn=run)
    sys.exit(run_command(parser, None, "fake-harness", on_interrupt="interrupted"))
""")


def test_sigterm_during_a_call_to_a_silent_broker_exits_at_once(tmp_path):
    client = tmp_path / "silent_client.py"
    client.write_text(SILENT_CLIENT)
    script = tmp_path / "harness.py"
    script.write_text(HARNESS.format(client=str(client), timeout=CALL_TIMEOUT_S))
    proc = subprocess.Popen([sys.executable, str(script), "--log-dir", str(tmp_path / "logs")], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "calling", proc.stderr.read()
        proc.send_signal(signal.SIGTERM)
        # bounded by the kill of the client, not the call's timeout: anything near it is the bug
        assert proc.wait(timeout=120) == EXIT_CODES[BROKEN]
        assert "fake-harness: interrupted (signal SIGTERM)" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
