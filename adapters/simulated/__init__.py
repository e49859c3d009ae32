"""Hourglass: adapters/simulated."""
