"""Checkers for the lab notebooks in ``labs/``: one module per lab (``twofour.course.labs.lab1`` ...).

A checker runs the learner's function on prepared cases and raises ``AssertionError`` with a
specific hint ("group (12, 7) has 3 non-zeros") when something is wrong. Hints point at the
mistake; they never print the expected answer itself.
"""
