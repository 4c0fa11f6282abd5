"""Helpers shared by every test layer (no fixtures here: those live in conftest.py)."""
