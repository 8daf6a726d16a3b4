"""Checkers for the lab notebooks in ``labs/``: one module per lab (``twofour.course.labs.lab1`` ...).

Their convention (hints, never answers; "not done yet" for a stub) is in ``labs/README.md``.
"""
