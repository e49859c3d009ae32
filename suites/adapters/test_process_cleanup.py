"""The process runtime's JVMs outlive a harness killed with SIGKILL; the next process runtime on the
host kills those whose owner is gone, and leaves those of a live harness alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from hourglass.adapters.rocketmq.process import OWNER_ENV, owner_tag, remove_leftover_processes


def _stand_in(owner: str) -> subprocess.Popen:
    """A long-lived process in its own session carrying an owner tag, as the runtime starts JVMs."""
    env = dict(os.environ, **{OWNER_ENV: owner})
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env, start_new_session=True)


def _gone_owner() -> str:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    tag = owner_tag(done.pid)  # read while it runs or just after: the start time may be unreadable
    done.wait()
    return tag


def test_jvms_of_a_gone_harness_are_killed_and_a_live_ones_kept():
    orphan = _stand_in(_gone_owner())
    kept = _stand_in(owner_tag())
    try:
        time.sleep(0.3)  # the environment is readable once exec is done
        killed = remove_leftover_processes()
        assert orphan.pid in killed
        assert orphan.wait(timeout=10) == -9
        assert kept.pid not in killed
        assert kept.poll() is None
    finally:
        for p in (orphan, kept):
            if p.poll() is None:
                p.kill()
                p.wait()
