"""A full store disk (``reference.disk``: its writes and re-puts refused until it is freed and the
broker's disk check notices)."""

from __future__ import annotations

from reference.faults import OPTIONAL, Family, Primitive, StepKind

FILL, FREE = "disk_full", "disk_free"
#: the primitive fault actions of a full store (``fault`` events of ``target: broker``)
DISK_ACTIONS = (FILL, FREE)
#: what its system must be set up for: the store on a size-limited filesystem
FILLABLE_STORE = "fillable_store"


def _expand(step) -> list:
    return [(0, FILL, {})] + ([(step.duration_ms, FREE, {})] if step.duration_ms else [])


FAMILY = Family(
    name="disk",
    rank=20,
    steps=(StepKind(FILL, _expand, OPTIONAL, broker_only=True, what="fills the broker's store",
                    setup=frozenset({FILLABLE_STORE}),
                    description="disk_full = fill the broker's store for duration_ms (0: to the end), then free it"),),
    primitives=(Primitive(FILL, verb="fill_disk", heals=FREE), Primitive(FREE, verb="free_disk")),
    effects={"store": "reference.disk:store_outages"},
    skip_words="fill the store of",
)
