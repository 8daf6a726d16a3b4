"""How the trace report shows its numbers: times in ms, speedups, Amdahl's bound (never ``nan`` or ``inf``).

Shared by the report's verdicts (``report``) and the text and HTML pages (``render``).

>>> fmt_ms(1234.5), fmt_speedup(1.234), fmt_speedup(float("nan")), fmt_bound(1.0)
('1.234 ms', '1.23x', 'n/a', 'no limit (p = 1)')
"""

from __future__ import annotations

import math

from ...amdahl import max_speedup


def fmt_speedup(s: float) -> str:
    """A speedup as shown: ``1.23x``; ``n/a`` when it cannot be measured (never ``nanx`` or ``infx``)."""
    return f"{s:.2f}x" if math.isfinite(s) else "n/a"


def fmt_bound(p: float) -> str:
    """Amdahl's bound ``1 / (1 - p)`` as shown; ``no limit`` at p = 1 (never ``infx``)."""
    bound = max_speedup(min(max(p, 0.0), 1.0))
    return f"{bound:.2f}x" if math.isfinite(bound) else "no limit (p = 1)"


def fmt_ms(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us < 10_000 else f"{us / 1000:.1f} ms"
