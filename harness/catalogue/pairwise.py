"""A deterministic pairwise (all-pairs) cover of a product of axes, greedy: repeatedly take the
first combination, in product order, that covers the most value pairs not yet covered. No seed is
needed (ties go to the earlier combination), so the same axes always give the same set."""

from __future__ import annotations

from itertools import combinations, product
from typing import Sequence, TypeVar

T = TypeVar("T")


def pairs_of(combo: Sequence) -> set[tuple]:
    return {(i, combo[i], j, combo[j]) for i, j in combinations(range(len(combo)), 2)}


def all_pairs(axes: Sequence[Sequence]) -> set[tuple]:
    return {(i, a, j, b) for i, j in combinations(range(len(axes)), 2) for a in axes[i] for b in axes[j]}


def pairwise(axes: Sequence[Sequence[T]]) -> list[tuple[T, ...]]:
    """Combinations of one value per axis such that every pair of values of two axes appears in
    at least one of them; far fewer than the full product (3x3x3x2x3 = 162 -> about 10)."""
    uncovered = all_pairs(axes)
    candidates = list(product(*axes))
    out: list[tuple[T, ...]] = []
    while uncovered:
        best = max(candidates, key=lambda c: len(pairs_of(c) & uncovered))  # max keeps the first of ties
        out.append(best)
        uncovered -= pairs_of(best)
        candidates.remove(best)
    return out
