"""ipywidgets calculators over :mod:`twofour.amdahl` and :mod:`twofour.request`, for Jupyter and Colab.

On the static site the JavaScript calculator takes their place. Each calculator holds its controls,
the last valid result and the current input error, so it can be driven (and tested) without a display:

>>> calc = amdahl_calculator(p=0.87, s=1.78)
>>> round(calc.result["speedup"], 3)
1.616
>>> calc.controls["s"].value = 1.0
>>> calc.result["speedup"]
1.0
"""

from __future__ import annotations

import html
import io

import ipywidgets as W

from ..amdahl import averaged_speedup_mistake, max_speedup, speedup
from ..funnel import funnel
from ..hardware import GPUS
from ..models import PRESETS, LLAMA_3_8B
from ..request import DTYPE_BYTES, Assumptions, Workload, estimate
from .figures.funnel import plot_funnel

__all__ = ["AmdahlCalculator", "RequestCalculator", "amdahl_calculator", "request_calculator"]

_WIDE = W.Layout(width="340px")
_STYLE = {"description_width": "150px"}


def _control(cls, description: str, layout=_WIDE, **kwargs):
    """One input widget in the calculators' style."""
    return cls(description=description, style=_STYLE, layout=layout, **kwargs)


class _Calculator:
    """Shared plumbing: a root widget, an HTML result, an error line shown instead of a traceback."""

    def __init__(self):
        self.result = None
        self.error = ""
        self.output = W.HTML()
        self.message = W.HTML()

    def _start(self, controls: dict, widget) -> None:
        """Hold ``controls`` and ``widget``, recompute on every change, and compute once now."""
        self.controls, self.widget = controls, widget
        for control in controls.values():
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def _repr_mimebundle_(self, **kwargs):  # display the widget when the object ends a cell
        return self.widget._repr_mimebundle_(**kwargs)

    def _set_error(self, exc: Exception | None) -> None:
        self.error = "" if exc is None else str(exc)
        self.message.value = self.error and (f'<p style="color:#D55E00"><b>Input problem:</b> '
                                             f'{html.escape(self.error)} (showing the last valid result)</p>')


class AmdahlCalculator(_Calculator):
    """Two inputs (``p``, ``s``): the request-level speedup, its bound, and the averaging mistake."""

    def __init__(self, p: float = 0.87, s: float = 1.78):
        super().__init__()
        slider = {"step": 0.01, "readout_format": ".2f"}
        c = {"p": _control(W.FloatSlider, "eligible fraction p", value=p, min=0.0, max=1.0, **slider),
             "s": _control(W.FloatSlider, "GEMM speedup s", value=s, min=0.25, max=4.0, **slider)}
        self._start(c, W.VBox([*c.values(), self.message, self.output]))

    def update(self) -> None:
        p, s = self.controls["p"].value, self.controls["s"].value
        try:
            result = {
                "speedup": speedup(p, s),
                "bound": max_speedup(p),
                "averaged_mistake": averaged_speedup_mistake([p], [s]),
            }
        except (ValueError, TypeError) as exc:
            self._set_error(exc)
            return
        self._set_error(None)
        self.result = result
        bound = "no limit" if result["bound"] == float("inf") else f"{result['bound']:.2f}x"
        self.output.value = (
            f"<p><b>speedup = 1 / ((1 - {p:.2f}) + {p:.2f} / {s:.2f}) = {result['speedup']:.3f}x</b><br>"
            f"bound with an infinitely fast GEMM, 1 / (1 - p): {bound}<br>"
            f"<span style='color:#6E6E6E'>the averaging mistake would claim {result['averaged_mistake']:.3f}x</span></p>"
        )


# The shape fields of a custom model (TransformerConfig's names).
_CUSTOM_FIELDS = ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")
_GROUPS = {
    "attention projections (q, k, v, o)": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "MLP (gate, up, down)": ("gate_proj", "up_proj", "down_proj"),
    "LM head": ("lm_head",),
}


class RequestCalculator(_Calculator):
    """The request-time model behind a form: workload, GPU, GEMM speedup -> TTFT, TPOT, p, funnel;
    ``result`` is a :class:`twofour.request.RequestEstimate`; ``figure`` an image of the request's funnel.
    """

    def __init__(self, model: str = LLAMA_3_8B.name, gpu: str = "H100", dtype: str = "bf16", batch: int = 1,
                 prompt_len: int = 512, output_len: int = 256, measured_speedup: float | None = None,
                 draw: bool = True):
        super().__init__()
        self.draw = draw
        gpus = [name for name, spec in GPUS.items() if spec.sparse_24]
        base = PRESETS.get(model, LLAMA_3_8B)
        c = {
            "model": _control(W.Dropdown, "model", options=[*PRESETS, "custom"],
                              value=model if model in PRESETS else "custom"),
            "gpu": _control(W.Dropdown, "GPU", options=gpus, value=gpu),
            "dtype": _control(W.Dropdown, "dtype", options=list(DTYPE_BYTES), value=dtype),
            "batch": _control(W.BoundedIntText, "batch", value=batch, min=1, max=1_000_000),
            "prompt_len": _control(W.BoundedIntText, "prompt tokens", value=prompt_len, min=1, max=10**8),
            "output_len": _control(W.BoundedIntText, "output tokens", value=output_len, min=1, max=10**8),
            "gemm_source": W.ToggleButtons(options=["predicted (roofline)", "measured"],
                                           value="measured" if measured_speedup else "predicted (roofline)",
                                           description="GEMM speedup", style=_STYLE),
            "measured_speedup": _control(W.BoundedFloatText, "measured 2:4 GEMM x",
                                         value=measured_speedup or 1.5, min=0.01, max=100.0, step=0.05),
            "pruned": _control(W.SelectMultiple, "2:4 layers", W.Layout(width="420px"), options=list(_GROUPS),
                               value=list(_GROUPS)[:2], rows=3),
            "step_overhead_ms": _control(W.BoundedFloatText, "overhead per step (ms)", value=0.0, min=0.0,
                                         max=1000.0, step=0.1),
            **{f: _control(W.BoundedIntText, f, value=getattr(base, f), min=1, max=10**7)
               for f in _CUSTOM_FIELDS},
        }
        self.custom_box = W.VBox([c[f] for f in _CUSTOM_FIELDS])
        self.figure = W.Image(format="png")
        self._start(c, W.HBox([
            W.VBox([c["model"], self.custom_box, c["gpu"], c["dtype"], c["batch"], c["prompt_len"], c["output_len"],
                    c["gemm_source"], c["measured_speedup"], c["pruned"], c["step_overhead_ms"]]),
            W.VBox([self.message, self.output, self.figure]),
        ]))

    def update(self) -> None:
        c = self.controls
        self.custom_box.layout.display = "" if c["model"].value == "custom" else "none"
        c["measured_speedup"].disabled = c["gemm_source"].value != "measured"
        try:
            pruned = tuple(kind for group in c["pruned"].value for kind in _GROUPS[group])
            custom = {f: int(c[f].value) for f in _CUSTOM_FIELDS}
            cfg = PRESETS.get(c["model"].value) or LLAMA_3_8B.with_(**custom)
            workload = Workload(cfg, int(c["batch"].value), int(c["prompt_len"].value),
                                int(c["output_len"].value), dtype=c["dtype"].value, pruned=pruned)
            measured = float(c["measured_speedup"].value) if c["gemm_source"].value == "measured" else None
            est = estimate(workload, c["gpu"].value, gemm_speedup=measured,
                           assumptions=Assumptions(step_overhead_s=float(c["step_overhead_ms"].value) * 1e-3))
        except (ValueError, TypeError) as exc:
            self._set_error(exc)
            return
        self._set_error(None)
        self.result = est
        self.output.value = _result_html(est)
        if self.draw:
            self.figure.value = _funnel_png(est)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def _result_html(est) -> str:
    s = est.summary()
    rows = [
        ("time to first token", _ms(s["ttft_dense_s"]), _ms(s["ttft_sparse_s"]), s["speedup_ttft"], s["p_prefill"]),
        ("time per output token", _ms(s["tpot_dense_s"]), _ms(s["tpot_sparse_s"]), s["speedup_tpot"], s["p_decode"]),
        ("whole request", _ms(s["total_dense_s"]), _ms(s["total_sparse_s"]), s["speedup_request"], s["p_request"]),
    ]
    body = "".join(
        f"<tr><td>{name}</td><td>{d}</td><td>{sp}</td><td><b>{x:.3f}x</b></td><td>{p:.1%}</td></tr>"
        for name, d, sp, x, p in rows
    )
    return (
        "<table><tr><th>part of the request</th><th>dense</th><th>2:4</th><th>speedup</th><th>eligible p</th></tr>"
        f"{body}</table>"
        f"<p>2:4 GEMM speedup used: prefill {s['gemm_speedup_prefill']:.3f}x, decode {s['gemm_speedup_decode']:.3f}x. "
        "Still to measure: does the sparse kernel run at this M, its real speedup, and the quality cost.</p>"
    )


def _funnel_png(est) -> bytes:
    import matplotlib.pyplot as plt

    ax = plot_funnel(funnel(est, "request"), title="From the data sheet to this request")
    buffer = io.BytesIO()
    ax.figure.savefig(buffer, format="png")
    plt.close(ax.figure)
    return buffer.getvalue()


def amdahl_calculator(p: float = 0.87, s: float = 1.78) -> AmdahlCalculator:
    """Build the two-input Amdahl calculator (defaults: decode at batch 1, fp16 bytes ceiling)."""
    return AmdahlCalculator(p, s)


def request_calculator(**defaults) -> RequestCalculator:
    """Build the request calculator; keyword arguments set the starting values.

    Example:
        >>> calc = request_calculator(batch=8, draw=False)
        >>> calc.controls["batch"].value, calc.error
        (8, '')
    """
    return RequestCalculator(**defaults)
