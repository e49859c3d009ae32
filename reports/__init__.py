"""Hourglass: reports."""
