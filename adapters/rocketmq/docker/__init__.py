"""Dockerfile templates of the container runtime (package data; read by ``image.py``)."""
