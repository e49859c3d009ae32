"""What a slow step of an adapter is doing now, for whoever shows a batch's progress.

An adapter wraps a slow step (an image's first build, a download of a version's jars, a pull) in
:func:`step`; :mod:`harness.batch` runs each job inside :func:`reporting`, so its progress line
says that step ("building image hourglass/rocketmq:… (first use)") instead of "starting broker".
Outside a batch (a command of its own), :func:`step` does nothing. The sink is per thread (a
context variable): the jobs of a batch run side by side, each in a thread of its own.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Callable, Iterator

#: called with the step's text when it begins; returns what to call when it ends
Sink = Callable[[str], Callable[[], None]]

_sink: contextvars.ContextVar[Sink | None] = contextvars.ContextVar("hourglass_phase_sink", default=None)


@contextmanager
def step(text: str) -> Iterator[None]:
    """The slow step ``text`` is under way for the duration (announced to the batch, if one listens)."""
    sink = _sink.get()
    undo = sink(text) if sink is not None else None
    try:
        yield
    finally:
        if undo is not None:
            undo()


@contextmanager
def reporting(sink: Sink) -> Iterator[None]:
    """The steps of this thread go to ``sink`` for the duration."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
