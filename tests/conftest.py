"""Generic pytest setup shared by every test module. Keep topic-specific fixtures next to
their tests (e.g. tests/site/conftest.py); add only markers and fixtures everyone needs here."""

from __future__ import annotations

import pytest

def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no CUDA GPU is visible, with the reason in the report."""
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
