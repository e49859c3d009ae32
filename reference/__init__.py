"""Hourglass: reference."""
