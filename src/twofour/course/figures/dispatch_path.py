"""The dispatch path as an SVG diagram: ``nn.Linear`` to the kernel that actually runs.

:func:`path_svg` draws the two roads a linear layer can take (:data:`CAPTION` says which is
which); pass a verdict's path to highlight the road *this* weight takes. The drawing is committed
as ``docs/assets/dispatch-path.svg`` (a test keeps the two equal); it sits on a white card, for
light and dark mode, and never shrinks below :data:`MIN_WIDTH_PX`, so labels stay 10 CSS px or more.

>>> svg = path_svg("dense")
>>> svg.startswith("<svg") and "cuSPARSELt" in svg
True
"""

from __future__ import annotations

from html import escape

from ..plotting import color

__all__ = ["path_svg", "HIGHLIGHTS", "MIN_WIDTH_PX", "CAPTION"]

# What to see in the drawing (its <title> says what it is), shown under it in the notebook.
CAPTION = ("Follow the colours: blue is the road of a dense tensor, zeros or not, to the dense GEMM; orange is the only road "
           "to a 2:4 kernel, through a packed SparseSemiStructuredTensor and __torch_dispatch__ to cuSPARSELt or CUTLASS; "
           "the dashed vermillion arrow is the refusal when the GPU, dtype or shape is not supported, never a silent dense fallback.")

MIN_WIDTH_PX = 600  # 720 units wide, smallest label 12 units: 12 * 600 / 720 = 10 px

HIGHLIGHTS = (None, "dense", "sparse-cusparselt", "sparse-cutlass", "error")
_DENSE, _SPARSE, _ERROR, _INK, _MUTED = color("dense"), color("2:4"), color("published"), "#1F1F1F", "#5A5A5A"
# A box's (stroke, fill) by the road it is on.
_ROAD = {"common": (_INK, "#F2F2F2"), "dense": (_DENSE, "#E3F0F8"), "sparse": (_SPARSE, "#FCEFD4"),
         "error": (_ERROR, "#FBE3D6")}


def _box(x, y, w, h, lines, road, *, bold_first=False, size=13):
    stroke, fill = _ROAD[road]
    out = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="1.6"/>']
    n = len(lines)
    for i, line in enumerate(lines):
        ty = y + h / 2 + (i - (n - 1) / 2) * (size + 3) + size * 0.35
        weight = ' font-weight="700"' if bold_first and i == 0 else ""
        out.append(
            f'<text x="{x + w / 2}" y="{ty:.1f}" text-anchor="middle" font-size="{size if i == 0 else size - 1}"'
            f'{weight} fill="{_INK}">{escape(line)}</text>'
        )
    return "\n".join(out)


def _arrow(x1, y1, x2, y2, stroke, *, dashed=False):
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{stroke}" stroke-width="1.8"{dash} '
        f'marker-end="url(#head-{stroke.lstrip("#")})"/>'
    )


def path_svg(highlight: str | None = None) -> str:
    """The diagram as SVG text; ``highlight`` is one of :data:`HIGHLIGHTS` (None: nothing dimmed).

    >>> "opacity" in path_svg("sparse-cutlass") and "opacity" not in path_svg()
    True
    """
    if highlight not in HIGHLIGHTS:
        raise ValueError(f"highlight must be one of {HIGHLIGHTS}, got {highlight!r}")
    on = {
        "dense": {"common", "dense"},
        "sparse-cusparselt": {"common", "convert", "sparse", "cusparselt"},
        "sparse-cutlass": {"common", "convert", "sparse", "cutlass"},
        "error": {"common", "convert", "error"},
    }.get(highlight)

    def group(name, *parts):
        dim = "" if on is None or name in on else ' opacity="0.28"'
        return f'<g id="{name}"{dim}>\n' + "\n".join(parts) + "\n</g>"

    markers = "".join(
        f'<marker id="head-{c.lstrip("#")}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
        for c in (_INK, _DENSE, _SPARSE, _ERROR)
    )
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 720 430" width="720" height="430" '
        f'style="min-width: {MIN_WIDTH_PX}px" '
        "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif\">",
        "<title>Which kernel does nn.Linear run? A dense weight takes the dense GEMM; only a packed "
        "SparseSemiStructuredTensor reaches cuSPARSELt or CUTLASS</title>",
        f"<defs>{markers}</defs>",
        "<!-- White card so the figure reads the same in light and dark mode. -->",
        '<rect width="720" height="430" rx="10" fill="#FFFFFF"/>',
        group(
            "common",
            _box(250, 16, 220, 34, ["nn.Linear: y = x·Wᵀ + b"], "common", bold_first=True),
            _arrow(360, 50, 360, 68, _INK),
            _box(250, 70, 220, 34, ["F.linear(x, W, b) → aten::linear"], "common"),
            _arrow(360, 104, 360, 122, _INK),
            _box(235, 124, 250, 36, ["What is W?"], "common", bold_first=True),
        ),
        group(
            "dense",
            _arrow(290, 160, 185, 196, _DENSE),
            _box(40, 198, 290, 36, ["a dense tensor (zeros or not)"], "dense", bold_first=True),
            _arrow(185, 234, 185, 252, _DENSE),
            _box(40, 254, 290, 36, ["aten::addmm / aten::mm"], "dense"),
            _arrow(185, 290, 185, 308, _DENSE),
            _box(40, 310, 290, 62, ["dense GEMM: every zero is multiplied", "GPU: cuBLAS (…gemm…, nvjet…)",
                                    "CPU: MKL / oneDNN"], "dense", bold_first=True),
        ),
        group(
            "convert",
            _arrow(330, 216, 388, 216, _SPARSE),
            f'<text x="359" y="189" text-anchor="middle" font-size="12" fill="{_MUTED}">to_sparse_semi_structured(W)</text>',
        ),
        group(
            "sparse",
            _arrow(430, 160, 540, 196, _SPARSE),
            _box(390, 198, 300, 36, ["SparseSemiStructuredTensor (packed)"], "sparse", bold_first=True),
            _arrow(540, 234, 540, 252, _SPARSE),
            _box(390, 254, 300, 40, ["__torch_dispatch__: (W·xᵀ)ᵀ", "x zero-padded to the row multiple"],
                 "sparse"),
        ),
        group(
            "cusparselt",
            _arrow(470, 294, 465, 310, _SPARSE),
            _box(390, 312, 145, 62, ["cuSPARSELt", "_cslt_sparse_mm", "xmma_sparse_gemm"], "sparse",
                 bold_first=True),
        ),
        group(
            "cutlass",
            _arrow(610, 294, 615, 310, _SPARSE),
            _box(545, 312, 145, 62, ["CUTLASS (CC 8.x)", "_sparse_semi_", "structured_mm"], "sparse",
                 bold_first=True),
        ),
        group(
            "error",
            _arrow(359, 222, 359, 380, _ERROR, dashed=True),
            _box(170, 382, 380, 40, ["refused: RuntimeError, never a dense fallback",
                                     "device, GPU, dtype, shape or layout not supported"], "error"),
        ),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the committed asset
    import sys
    from pathlib import Path

    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/assets/dispatch-path.svg")
    target.write_text(path_svg())
    print(f"wrote {target}")
