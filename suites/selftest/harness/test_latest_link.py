"""``runs/latest``: when a batch has written its summary, a link beside its output tree points to the
tree (``harness.outdir.link_latest``, called by ``harness.session.write_summary``); replaced
atomically by the next batch; never made where the parent cannot be written, never over a user's
own ``latest``."""

from __future__ import annotations

import os

from hourglass.harness import outdir
from hourglass.harness.outdir import LATEST, link_latest, lock_out
from hourglass.harness.session import write_summary


def _tree(tmp_path, name: str):
    tree = tmp_path / "runs" / name
    (tree / "simulated").mkdir(parents=True)
    lock_out(tree)
    return tree


def test_a_batch_summary_points_latest_at_its_output_tree(tmp_path):
    first = _tree(tmp_path, "main-20261101T010000.000-1")
    write_summary(first / "simulated", "simulated", [], 1.0, [])
    link = tmp_path / "runs" / LATEST
    assert link.is_symlink() and os.readlink(link) == first.name  # relative: the runs stay movable
    assert (link / "simulated" / "summary.json").is_file()
    second = _tree(tmp_path, "main-20261102T010000.000-2")
    write_summary(second / "simulated", "simulated", [], 1.0, [])
    assert os.readlink(link) == second.name
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [LATEST, first.name, second.name]  # no temp link left


def test_no_link_for_a_directory_no_harness_holds(tmp_path):
    loose = tmp_path / "runs" / "loose"
    loose.mkdir(parents=True)
    assert link_latest(loose) is None
    assert not os.path.lexists(tmp_path / "runs" / LATEST)


def test_no_link_where_the_parent_cannot_be_written(tmp_path, monkeypatch):
    tree = _tree(tmp_path, "main-x")
    monkeypatch.setattr(outdir.os, "access", lambda path, mode: False)  # root writes everywhere: say it cannot
    assert link_latest(tree / "simulated") is None
    assert not os.path.lexists(tmp_path / "runs" / LATEST)


def test_a_users_own_latest_is_left_alone(tmp_path):
    (tmp_path / "runs" / LATEST).mkdir(parents=True)
    tree = _tree(tmp_path, "main-y")
    assert link_latest(tree) is None
    assert (tmp_path / "runs" / LATEST).is_dir() and not (tmp_path / "runs" / LATEST).is_symlink()
