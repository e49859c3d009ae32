"""A full store disk (``reference.disk``: its writes and re-puts refused until it is freed and the
broker's disk check notices): filled to the brim (``disk_full``), or to a used ratio above the
broker's ``diskSpaceWarningLevelRatio`` with room left on the disk (``disk_fill``, ``fill_percent``)."""

from __future__ import annotations

from hourglass.reference.faults import OPTIONAL, Family, Param, Primitive, StepKind

FILL, FREE = "disk_full", "disk_free"
#: a step that fills the store to ``fill_percent`` of its partition (recorded as ``disk_full`` with it)
FILL_TO = "disk_fill"
#: the primitive fault actions of a full store (``fault`` events of ``target: broker``)
DISK_ACTIONS = (FILL, FREE)
#: what its system must be set up for: the store on a size-limited filesystem
FILLABLE_STORE = "fillable_store"
#: a fill to a ratio leaves at least this much of the partition free (the broker writes meanwhile)
MAX_FILL_PERCENT = 97


def _expand(step) -> list:
    fields = {"fill_percent": step.fill_percent} if step.action == FILL_TO else {}
    return [(0, FILL, fields)] + ([(step.duration_ms, FREE, {})] if step.duration_ms else [])


FAMILY = Family(
    name="disk",
    rank=20,
    steps=(StepKind(FILL, _expand, OPTIONAL, broker_only=True, what="fills the broker's store",
                    setup=frozenset({FILLABLE_STORE}),
                    description="disk_full = fill the broker's store for duration_ms (0: to the end), then free it"),
           StepKind(FILL_TO, _expand, OPTIONAL, params=("fill_percent",), broker_only=True,
                    what="fills the broker's store to a ratio", setup=frozenset({FILLABLE_STORE}),
                    description="disk_fill = fill the broker's store to fill_percent of its partition (above the "
                                "profile's disk_warning_percent) for duration_ms (0: to the end), then free it")),
    primitives=(Primitive(FILL, verb="fill_disk", args=("fill_percent",), heals=FREE), Primitive(FREE, verb="free_disk")),
    params=(Param("fill_percent", 0, MAX_FILL_PERCENT, "a ratio", f"the used ratio to fill to, 1..{MAX_FILL_PERCENT}",
                  "disk_fill only: the share of the store's partition used once filled (above the broker's "
                  f"diskSpaceWarningLevelRatio, 1..{MAX_FILL_PERCENT}); must be 0 for the others."),),
    event_fields=(("fill_percent", "int", "disk_full of a disk_fill step: the used ratio it filled the store to"),),
    effects={"store": "hourglass.reference.disk:store_outages"},
    skip_words="fill the store of",
)
