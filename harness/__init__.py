"""Hourglass: harness."""
