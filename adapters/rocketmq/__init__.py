"""Hourglass: adapters/rocketmq."""
