"""The "2:4 in late 2026" status box: one text, shown on the home page and in chapters 0, 3 and 7.

The text lives in one file, ``twofour/course/data/status.md``, so the copies cannot drift.

>>> STATUS_DATE
'2026-11-30'
>>> text = status_markdown()
>>> "vllm-project/vllm#36799" in text and "pytorch/ao#4728" in text
True
>>> status_box()._repr_markdown_() == text
True
"""

from __future__ import annotations

from importlib import resources

__all__ = ["STATUS_DATE", "STATUS_FILE", "status_markdown", "StatusBox", "status_box"]

STATUS_DATE = "2026-11-30"
STATUS_FILE = "status.md"  # in twofour/course/data/; docs/index.md includes it by path


def status_markdown() -> str:
    """The status box as Markdown (the shipped ``twofour/course/data/status.md``), stripped."""
    return (resources.files("twofour.course") / "data" / STATUS_FILE).read_text(encoding="utf-8").strip() + "\n"


class StatusBox:
    """Displays the status box: Jupyter and Colab render its Markdown, ``str`` gives the text."""

    def _repr_markdown_(self) -> str:
        return status_markdown()

    def __repr__(self) -> str:  # the text/plain fallback: title and date only
        return f"2:4 in late 2026 (status on {STATUS_DATE}); display in Jupyter for the full box"

    __str__ = _repr_markdown_


def status_box() -> StatusBox:
    """The object a chapter's status cell displays (``from twofour.course.status import status_box``)."""
    return StatusBox()
