"""The report as text (the terminal) and as a self-contained HTML page with an SVG timeline.

The report (:mod:`.report`) is plain data; its caller renders it here::

    report = analyze("sparse.json.gz")
    print(report_text(report, width=100))
    Path("report.html").write_text(report_html(report))
"""

from __future__ import annotations

import html
import os

from ..._common.fit import fit
from ..._common.text import show_path
from ...vocabulary import CLASS_COLORS
from ...amdahl import speedup
from ..kernels import DENSE, OTHER, SPARSE_CUSPARSELT, classify
from . import validate
from .classify import ATTENTION, LABELS, TRACE_CLASSES, trace_class
from .report import PhaseReport, TraceReport, fmt_bound, fmt_ms, fmt_speedup


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _header(r: TraceReport) -> list[str]:
    tr = r.trace
    if tr.has_gpu:
        what = (f"GPU trace, {tr.device_name or 'GPU not named'}: {tr.count('kernel'):,} kernels, "
                f"{tr.count('gpu_memcpy') + tr.count('gpu_memset'):,} memcpy/memset, {tr.count('cpu_op'):,} CPU operators")
    else:
        what = f"CPU trace (no GPU activity recorded): {tr.count('cpu_op'):,} CPU operators"
    lines = [f"twofour trace: {show_path(os.path.basename(r.path))}"]
    # Left-out events come first: every number below is computed without them.
    for excluded, which in ((r.excluded, "the trace"), (r.baseline_excluded, "the baseline")):
        if excluded:
            lines.append(f"  EXCLUDED (--drop-invalid): {validate.summary(excluded, which)}; every number below leaves "
                         "them out")
    for n, which in zip(r.outside_steps, ("the trace", "the baseline")):
        if n:
            lines.append(f"  LEFT OUT: {n:,} GPU events of {which} launched inside no step (after the last step "
                         "annotation, or cut by the profiler's schedule); no step's numbers include them")
    lines.append(f"  {what}")
    if r.baseline_path:
        lines.append(f"  dense baseline: {show_path(os.path.basename(r.baseline_path))}")
    return lines


def _phase_text(ph: PhaseReport, width: int | None = None) -> list[str]:
    L = []
    n = len(ph.steps)
    summarized = set(ph.summarized)
    left = [ph.steps[i].name for i in range(n) if i not in summarized]
    head = f"{ph.phase}: {n} step{'s' if n != 1 else ''}"
    if left:
        head += f"; summary over {ph.step_names} ({', '.join(left)} left out: a first step carries warm-up)"
    L.append(head)
    gpu = ph.device == "cuda"
    col = "GPU busy" if gpu else "outside ops"
    L.append(f"  {'step':<22}{'wall':>11}{col:>13}{'GEMM p':>9}{'2:4 GEMMs':>12}")
    # A long trace: the first and last few steps, and the spread of the ones in between.
    shown = list(range(n)) if n <= 12 else [*range(4), *range(n - 4, n)]
    for i in shown:
        st = ph.steps[i]
        if n > 12 and i == n - 4:
            walls = sorted(ph.steps[j].wall_us for j in range(4, n - 4))
            L.append(f"   ... {n - 8} more steps: wall median {fmt_ms(walls[len(walls) // 2])}, "
                     f"min {fmt_ms(walls[0])}, max {fmt_ms(walls[-1])}")
        mark = " " if i in summarized else "*"
        frac = (st.busy_us / st.wall_us if gpu else (st.outside_ops_us or 0) / st.wall_us) if st.wall_us > 0 else 0.0
        L.append(f" {mark}{_short(st.name, 21):<22}{fmt_ms(st.wall_us):>11}{frac:>12.0%} {st.p:>8.0%}"
                 f"{f'{st.sparse_gemms}/{st.gemms}':>12}")
    L += ["", f"  time by class, per step (mean of {ph.n})"]
    times = ph.time_us
    for c in TRACE_CLASSES:
        t = times.get(c, 0.0)
        if t > 0 or c in (DENSE, SPARSE_CUSPARSELT, ATTENTION, OTHER):
            L.append(f"    {LABELS[c]:<24}{fmt_ms(t):>11}{t / ph.wall_us:>8.1%}")
    if gpu:
        idle = ph.wall_us - ph.busy_us
        L.append(f"    {'GPU idle':<24}{fmt_ms(idle):>11}{idle / ph.wall_us:>8.1%}")
    else:
        out = ph.outside_ops_fraction * ph.wall_us
        L.append(f"    {'outside any operator':<24}{fmt_ms(out):>11}{ph.outside_ops_fraction:>8.1%}")
    L.append(f"    {'step (wall)':<24}{fmt_ms(ph.wall_us):>11}")
    L.append(f"  eligible share p = GEMM / step = {ph.p:.3f}")
    top = sorted(ph.kernel_table.items(), key=lambda kv: -kv[1][1])[:6]
    if top:
        L += ["", f"  top {'kernels' if gpu else 'operators (self time)'}, per step"]
        # The kernel name gives way when the report must fit a width (46: the columns after it).
        name_w = 58 if width is None else max(20, min(58, width - 46))
        for (nm, c), (cnt, us) in top:
            L.append(f"    {_short(nm, name_w):<{name_w}} {LABELS[c]:<22}{cnt / ph.n:>6.0f} x{fmt_ms(us / ph.n):>11}")
    if ph.unclassified:
        L += ["", "  unclassified kernel names (not guessed; counted as not eligible), per step"]
        L += [f"    {_short(nm, 70):<70}{fmt_ms(us / ph.n):>11}"
              for nm, us in sorted(ph.unclassified.items(), key=lambda kv: -kv[1])[:10]]
    if gpu and ph.largest_gaps:
        L += ["", "  largest GPU idle gaps (CPU operators running during each)"]
        for g in ph.largest_gaps:
            where = " > ".join(g.during[-3:]) if g.during else g.culprit
            setup = " (set-up of the next kernel)" if g.setup else ""
            nxt = f", before {_short(g.next_kernel, 40)}" if g.next_kernel else ""
            L.append(f"    {g.dur_us:8.1f} us  {g.step} +{fmt_ms(g.at_us)}{nxt}")
            L.append(f"                CPU in: {where}{setup}")
        L.append("  idle time by what the CPU was doing")
        for lab, us in sorted(ph.culprits.items(), key=lambda kv: -kv[1])[:4]:
            su = ph.setup_us.get(lab, 0.0)
            extra = f" ({su / us:.0%} of it set-up of the next kernel)" if su > 0 else ""
            L.append(f"    {us / ph.idle_us:>5.0%}  {lab}{extra}")
    cmp = ph.comparison
    if cmp is not None:
        L += ["", f"  against the dense baseline ({ph.phase}, mean per summarized step)"]
        L.append(f"    GEMM time   dense {fmt_ms(cmp.dense_gemm_us):>10}   2:4 {fmt_ms(cmp.sparse_gemm_us):>10}   "
                 f"GEMM speedup {fmt_speedup(cmp.gemm_speedup)}")
        L.append(f"    step time   dense {fmt_ms(cmp.dense_wall_us):>10}   2:4 {fmt_ms(cmp.sparse_wall_us):>10}   "
                 f"end to end   {fmt_speedup(cmp.end_to_end)}")
        if cmp.shapes:
            L.append(f"    operand shapes: {cmp.shapes}")
    L += ["", f"  funnel ({ph.phase})"]
    funnel = ph.funnel()
    if not funnel:
        L.append("    none: a CPU trace (2:4 kernels run on NVIDIA GPUs only)")
    L += [f"    {s.label:<20}{fmt_speedup(s.speedup):>8}  {s.how:<10} {s.explains}" for s in funnel]
    if funnel:
        p = min(ph.comparison.dense_p if ph.comparison else ph.p, 1.0)
        src = "the dense baseline" if ph.comparison else "this trace"
        at_ceiling = f"{speedup(p, ph.ceiling):.2f}x with {ph.ceiling:.2f}x GEMMs, " if ph.ceiling < 2.0 else ""
        L.append(f"  Amdahl from measured p = {p:.2f} ({src}): at most {at_ceiling}{speedup(p, 2.0):.2f}x with 2x "
                 f"GEMMs, {fmt_bound(p)} with infinitely fast GEMMs")
    L += ["", "  verdicts"]
    L += [f"    - {v}" for v in ph.verdicts()]
    return L


def report_text(r: TraceReport, width: int | None = None) -> str:
    """The report as ``twofour trace`` prints it; ``width`` wraps its sentences and shortens kernel
    names to fit (None keeps whole lines; ``twofour trace`` passes the terminal's, or ``COLUMNS``)."""
    lines = _header(r)
    for ph in r.phases:
        lines += ["", *_phase_text(ph, width)]
    return "\n".join(fit(lines, width))


def _timeline_svg(r: TraceReport, ph: PhaseReport, width: int = 900) -> str:
    """One summarized step as an SVG: GPU activity coloured by class, idle gaps blank."""
    if ph.device != "cuda" or not ph.summarized:
        return ""
    st = ph.steps[ph.summarized[0]]
    tr = r.trace
    ix = r.index
    a, b = st.start_us, st.start_us + st.wall_us
    sel = ix.gpu[(tr.ts[ix.gpu] < b) & (ix.end[ix.gpu] > a)]
    scale = (width - 20) / max(b - a, 1e-9)
    rects = []
    for g in sel.tolist():
        nm = tr.names[tr.name[g]]
        c = trace_class(nm, classify(nm))
        x = 10 + (max(tr.ts[g], a) - a) * scale
        w = max((min(ix.end[g], b) - max(tr.ts[g], a)) * scale, 0.8)
        rects.append(f'<rect x="{x:.1f}" y="24" width="{w:.1f}" height="26" fill="{CLASS_COLORS[c]}">'
                     f"<title>{html.escape(nm[:200])} ({tr.dur[g]:.1f} us, {LABELS[c]})</title></rect>")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="70" role="img" '
        f'aria-label="GPU timeline of {html.escape(st.name)}">'
        f'<rect x="10" y="24" width="{width - 20}" height="26" fill="#f3f3f3" stroke="#ccc"/>'
        + "".join(rects)
        + f'<text x="10" y="16" font-size="12">{html.escape(st.name)}: {fmt_ms(st.wall_us)}; '
        f"coloured = GPU busy, grey = GPU idle</text>"
        f'<text x="10" y="66" font-size="11">0</text><text x="{width - 10}" y="66" font-size="11" '
        f'text-anchor="end">{fmt_ms(st.wall_us)}</text></svg>'
    )


def report_html(r: TraceReport) -> str:
    """A self-contained HTML page (no external requests) with the report and a timeline."""
    body = []
    for ph in r.phases:
        body.append(f"<h2>{html.escape(ph.phase)}</h2>")
        svg = _timeline_svg(r, ph)
        if svg:
            body.append(f"<figure>{svg}</figure>")
        body.append("<h3>verdicts</h3><ul>" + "".join(f"<li>{html.escape(v)}</li>" for v in ph.verdicts()) + "</ul>")
        body.append("<h3>funnel</h3><table><tr><th>step</th><th>speedup</th><th>how</th><th>note</th></tr>")
        for s in ph.funnel():
            body.append(f"<tr><td>{html.escape(s.label)}</td><td>{fmt_speedup(s.speedup)}</td><td>{html.escape(s.how)}</td>"
                        f"<td>{html.escape(s.explains)}</td></tr>")
        body.append("</table>")
        body.append("<h3>full report</h3><pre>" + html.escape("\n".join(_phase_text(ph))) + "</pre>")
    legend = " ".join(f'<span style="background:{CLASS_COLORS[c]};padding:0 6px;color:#000">{LABELS[c]}</span>'
                      for c in TRACE_CLASSES)
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>twofour trace: {html.escape(show_path(os.path.basename(r.path)))}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#222;"
        "background:#fff}pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;font-size:.8rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}</style>"
        "</head><body>"
        f"<h1>twofour trace</h1><pre>{html.escape(chr(10).join(_header(r)))}</pre><p>{legend}</p>"
        + "".join(body) + "</body></html>\n"
    )
