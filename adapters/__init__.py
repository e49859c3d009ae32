"""Hourglass: adapters."""
