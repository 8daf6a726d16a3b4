"""Interview practice questions as data: load the bank, compute every number in it, render it.

The bank (``twofour/course/data/practice.yaml``) is a list of questions. Each has a prompt, a
rubric (what a strong answer must contain), a worked answer, common mistakes, follow-ups and
grading signals (what a strong, an acceptable and a weak answer sound like). Every
number a question states is **not typed into the text**: it is a named entry of the question's
``numbers`` list, computed by a short expression on the toolkit (``amdahl.speedup(0.87, 1.78)``)
or taken from a cited table in the toolkit, and the text refers to it as ``{{name}}``. So when a
model, a GPU table or a formula changes, the worked answers change with it, and a typo in an
expression fails the tests (``tests/test_practice.py`` evaluates every one).

A quick check asks for one number and says what it is graded against (``basis``): first-principles
arithmetic, a published measurement, or the project's own GPU measurement, never a model's
prediction. Its unit is one the site's calculators show (MB and MiB told apart), and its
tolerance a whole percent, shown the way the page's checker reports it.

Expressions run in a restricted namespace (:data:`NAMESPACE`): the toolkit modules, the number
names defined earlier in the same question, and a few helpers from this module. No builtins,
no names starting with ``_``, no imports, no lambdas or comprehensions.

>>> bank = load_bank()
>>> len(bank) >= 60
True
>>> q = bank.get("amdahl-bs1-decode")
>>> values = q.evaluate()
>>> round(values["bs1_speedup"], 3)
1.484
>>> "{{" in q.render("answer")
False
"""

from __future__ import annotations

import ast
import copy
import functools
import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import torch

from .._common.args import require_positive_int
from .. import amdahl, hardware, models, packing, request, roofline, structure
from ..dispatch import rules as dispatch_rules
from ..funnel import funnel as _funnel
from ..quality import published as quality_published
from ..roofline import formats

__all__ = [
    "LEVELS",
    "TOPICS",
    "NAMESPACE",
    "BankError",
    "Number",
    "QuickCheck",
    "Signals",
    "Question",
    "Bank",
    "load_bank",
    "evaluate_expression",
    "format_value",
    "BASES",
    "UNITS",
    "funnel_step",
    "wave_count",
    "tokens_per_second",
    "cost_per_token_ratio",
    "published_speedup",
    "published_value",
    "measured_gemm",
    "measured_crossover_m",
    "measured_phase_speedup",
    "compute_bound_m",
    "render_markdown",
    "DEFAULT_BANK",
]

LEVELS: tuple[str, ...] = ("fundamentals", "applied", "deep")
# The five stages of the answer, the kernel's own speed, and the neighbouring topics.
TOPICS: dict[str, str] = {
    "structure": "Stage 1 · Structure",
    "representation": "Stage 2 · Representation",
    "dispatch": "Stage 3 · Dispatch",
    "kernel-speed": "Kernel speed",
    "quality": "Stage 4 · Quality",
    "amdahl": "Stage 5 · Amdahl",
    "end-to-end": "The whole answer",
    "quantization": "2:4 next to quantization",
    "capacity": "Memory, batch and the latency target",
    "serving-m": "M in a serving engine",
    "benchmarking": "Benchmarking a GEMM or a step",
    "profiling": "Nsight: which bottleneck is it?",
    "gemm-partitioning": "GEMM partitioning and waves",
    "training": "Training with 2:4",
    "ecosystem": "2:4 in 2026",
    "latency": "Reasoning budgets and TTFT",
    "cost": "Routing, cascades or compression",
}
# What a quick check is graded against. A model's prediction is never the answer key.
BASES: dict[str, str] = {
    "first principles": "first-principles arithmetic",
    "published": "a published measurement",
    "measured": "the project's own H200 measurement",
}
# Units a quick check may ask in: the calculators' units, bytes in decimal or binary made explicit.
UNITS: dict[str, str] = {
    "": "",
    "x": "as a speedup, e.g. 1.23",
    "%": "in percent",
    "bits": "in bits",
    "KiB": "in KiB (1 KiB = 1,024 bytes)",
    "MB": "in MB (1 MB = 10^6 bytes)",
    "MiB": "in MiB (1 MiB = 2^20 bytes)",
    "GB": "in GB (1 GB = 10^9 bytes)",
    "GiB": "in GiB (1 GiB = 2^30 bytes)",
    "GB/s": "in GB/s (10^9 bytes per second)",
    "µs": "in µs",
    "ms": "in ms",
    "s": "in seconds",
    "tokens": "in tokens",
    "rows": "in rows",
    "groups": "in groups",
    "sequences": "in sequences",
    "patterns": "as a count of patterns",
    "tiles": "in tiles",
}

DEFAULT_BANK = "practice.yaml"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TEXT_FIELDS: tuple[str, ...] = ("prompt", "answer", "connects")
LIST_FIELDS: tuple[str, ...] = ("rubric", "mistakes", "follow_ups")


class BankError(ValueError):
    """A question in the bank is malformed; the message names the question and the field."""


# ---------------------------------------------------------------------------------------------
# Helpers the expressions may call (each one small and tested)


def funnel_step(est: request.RequestEstimate, scope: str, key: str) -> float:
    """Speedup of one funnel step (``datasheet`` ... ``request``) of a request estimate.

    >>> est = request.estimate(request.SCENARIOS["chat decode, batch 1"], "H100")
    >>> funnel_step(est, "decode", "datasheet")
    2.0
    """
    for step in _funnel(est, scope):
        if step.key == key:
            return step.speedup
    raise ValueError(f"key must be a funnel step key (datasheet, roofline_ceiling, kernel, eligible_fraction, request), got {key!r}")


def wave_count(M: int, N: int, sms: int, tile_m: int = 128, tile_n: int = 128) -> int:
    """Waves of ``tile_m x tile_n`` output tiles over ``sms`` SMs: ``ceil(tiles / sms)``.

    >>> wave_count(128 * 33, 4096, 132)
    8
    """
    for name, v in (("M", M), ("N", N), ("sms", sms), ("tile_m", tile_m), ("tile_n", tile_n)):
        require_positive_int(name, v)
    tiles = math.ceil(M / tile_m) * math.ceil(N / tile_n)
    return math.ceil(tiles / sms)


def tokens_per_second(n_bytes: float, bandwidth_gbs: float) -> float:
    """Decode tokens/s of a step that must read ``n_bytes`` at ``bandwidth_gbs`` GB/s (bytes-bound).

    >>> round(tokens_per_second(15.01e9, 2039), 1)    # Llama-3-8B bf16 at the A100's peak: the bound
    135.8
    """
    if n_bytes <= 0 or bandwidth_gbs <= 0:
        raise ValueError(f"n_bytes and bandwidth_gbs must be > 0, got {n_bytes!r} and {bandwidth_gbs!r}")
    return bandwidth_gbs * 1e9 / n_bytes


def published_speedup(record_id: str) -> float:
    """The speedup of one published GEMM timing, by its id in ``twofour/data/published-gemm.json``.

    >>> round(published_speedup("pt111339-m1"), 2)
    0.11
    """
    from ..roofline.published import published_records

    hits = [r for r in published_records() if r["id"] == record_id]
    if len(hits) != 1:
        ids = [r["id"] for r in published_records() if r.get("kind") == "gemm"]
        raise ValueError(f"record_id must be the id of one published record, got {record_id!r}; GEMM ids: {ids}")
    return float(hits[0]["speedup"])


def published_value(record_id: str, field_name: str) -> float:
    """One number of a published GEMM record (``dense_time``, ``sparse_time``, ``M`` ...).

    >>> published_value("pt111339-m1", "sparse_time")
    0.196
    """
    from ..roofline.published import published_records

    hits = [r for r in published_records() if r["id"] == record_id]
    if len(hits) != 1:
        raise ValueError(f"record_id must be the id of one published record, got {record_id!r}")
    value = hits[0].get(field_name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"field_name must name a number of record {record_id!r}, got {field_name!r} = {value!r}")
    return float(value)


@functools.lru_cache(maxsize=None)
def _measured_table(mode: str) -> dict:
    from ..bench import recorded_results

    table = {}
    for res in recorded_results("gpu"):
        for row in res.gpu_points(mode):
            table[(row["M"], row["N"], row["K"], row["dtype"])] = (row["dense_ms"], row["sparse_ms"])
    return table


def measured_gemm(M: int, N: int, K: int, dtype: str = "bfloat16", mode: str = "graph", what: str = "speedup") -> float:
    """One GEMM as the project's H200 run measured it (``twofour.bench.recorded_results("gpu")``).

    ``what`` is ``"speedup"`` (dense / 2:4), ``"dense_us"`` or ``"sparse_us"``; ``mode`` how the
    call was timed (``"graph"``: CUDA-graph replay, plans cached; ``"eager"``: one lone call).

    >>> round(measured_gemm(1, 4096, 14336), 2)          # Llama-3-8B down_proj, one token
    0.43
    """
    row = _measured_table(mode).get((M, N, K, dtype))
    if row is None:
        raise ValueError(f"no H200 measurement of M={M}, N={N}, K={K}, {dtype} in mode {mode!r}")
    dense_ms, sparse_ms = row
    values = {"speedup": dense_ms / sparse_ms, "dense_us": dense_ms * 1e3, "sparse_us": sparse_ms * 1e3}
    if what not in values:
        raise ValueError(f"what must be one of {sorted(values)}, got {what!r}")
    return values[what]


def measured_phase_speedup(workload: request.Workload, phase: str, mode: str = "graph") -> float:
    """The time-weighted 2:4 GEMM speedup of one phase of ``workload``, measured on the project's H200.

    :func:`twofour.request.measured_gemm_speedup` on ``recorded_results("gpu")``; raises if a GEMM of
    the phase was not measured.

    >>> measured_phase_speedup(request.SCENARIOS["chat decode, batch 1"], "decode") < 1
    True
    """
    from ..bench import recorded_results

    value = request.measured_gemm_speedup(recorded_results("gpu"), workload, mode=mode).get(phase)
    if value is None:
        raise ValueError(f"phase {phase!r} of this workload was not measured in mode {mode!r} on the H200")
    return value


def measured_crossover_m(N: int, K: int, dtype: str = "bfloat16", mode: str = "graph") -> int:
    """The smallest measured M from which 2:4 is faster than dense at that M and every larger one.

    >>> measured_crossover_m(14336, 4096)                 # Llama-3-8B gate/up on the H200
    256
    """
    rows = sorted((m, d / sp) for (m, n, k, dt), (d, sp) in _measured_table(mode).items() if (n, k, dt) == (N, K, dtype))
    if not rows:
        raise ValueError(f"no H200 measurements of N={N}, K={K}, {dtype} in mode {mode!r}")
    crossover = None
    for m, speedup in reversed(rows):
        if speedup < 1:
            break
        crossover = m
    if crossover is None:
        raise ValueError(f"2:4 never wins at the largest measured M for N={N}, K={K}")
    return crossover


def compute_bound_m(N: int, K: int, dtype: str = "bf16", gpu: str = "H200") -> int:
    """Smallest M at which ``M x K @ K x N`` has the arithmetic intensity of the GPU's dense ridge point.

    First principles: FLOPs over bytes moved once, against peak FLOP/s over bandwidth.

    >>> compute_bound_m(4096, 4096, "bf16", "H200") > 100
    True
    """
    ridge = roofline.ridge_point(gpu, dtype)
    M = 1
    while roofline.arithmetic_intensity(M, N, K, dtype) < ridge:
        M += 1
        if M > 1 << 20:
            raise ValueError(f"N={N}, K={K} never reaches the ridge point {ridge:.0f} FLOP/byte")
    return M


def first_torch_pinning(min_version: int) -> str:
    """The first torch release whose default wheel pins cuSPARSELt ``min_version`` or newer.

    ``min_version`` is torch's encoding (701 for 0.7.1); the table is
    :data:`twofour.dispatch.rules.TORCH_CUSPARSELT_PINS`.

    >>> first_torch_pinning(dispatch_rules.MIN_CUSPARSELT_FOR_BLACKWELL)
    '2.8.0'
    """
    def as_int(v: str) -> int:
        major, minor, patch = (int(x) for x in v.split("."))
        return major * 1000 + minor * 100 + patch

    def key(t: str) -> tuple[int, ...]:
        return tuple(int(x) for x in t.split("."))

    for torch_version in sorted(dispatch_rules.TORCH_CUSPARSELT_PINS, key=key):
        if as_int(dispatch_rules.TORCH_CUSPARSELT_PINS[torch_version]) >= min_version:
            return torch_version
    raise ValueError(f"no torch in the table pins cuSPARSELt {dispatch_rules.cusparselt_version_str(min_version)} or newer")


def transposable_patterns(n: int = 2, m: int = 4) -> int:
    """How many ``m x m`` keep-masks have exactly ``n`` kept values in every row *and* column.

    Such a mask is n:m along the rows of ``W`` and along the rows of ``W.T`` at once, which the
    backward pass needs (``dX = dY @ W`` reduces over W's other axis).

    >>> transposable_patterns(), math.comb(4, 2) ** 4      # transposable vs row-wise-only 2:4 tiles
    (90, 1296)
    """
    import itertools

    if not (isinstance(n, int) and isinstance(m, int) and 0 < n <= m <= 6):
        raise ValueError(f"n and m must be ints with 0 < n <= m <= 6, got n={n!r}, m={m!r}")
    rows = [c for c in itertools.product((0, 1), repeat=m) if sum(c) == n]
    count = 0
    for tile in itertools.product(rows, repeat=m):
        if all(sum(col) == n for col in zip(*tile)):
            count += 1
    return count


def cost_per_token_ratio(shares, relative_costs) -> float:
    """Mean cost per request under routing, relative to sending everything to the big model.

    ``shares[i]`` of the traffic goes to a tier whose cost per request is ``relative_costs[i]``
    of the big model's. Costs add up per request (like times in Amdahl's law), so the mean is a
    traffic-weighted *sum of costs*, and the saving factor is its inverse.

    >>> cost_per_token_ratio([0.7, 0.3], [0.1, 1.0])
    0.37
    """
    shares, relative_costs = list(shares), list(relative_costs)
    if len(shares) != len(relative_costs) or not shares:
        raise ValueError("shares and relative_costs must be non-empty and of the same length")
    total = 0.0
    for s in shares:
        total += s
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"shares must add up to 1 (all the traffic), got {total!r}")
    cost = 0.0
    for s, c in zip(shares, relative_costs):
        cost += s * c
    return round(cost, 12)


# The names an expression may use. Modules are exposed whole: their public functions are what
# the chapters teach, so a question computes with exactly the code the chapters run.
NAMESPACE: dict[str, object] = {
    "amdahl": amdahl,
    "packing": packing,
    "structure": structure,
    "roofline": roofline,
    "hardware": hardware,
    "models": models,
    "request": request,
    "published": quality_published,
    "math": math,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "int8": torch.int8,
    "fp32": torch.float32,
    "fp8": torch.float8_e4m3fn,
    "formats": formats,
    "rules": dispatch_rules,
    "LLAMA_3_8B": models.LLAMA_3_8B,
    "LLAMA_3_70B": models.LLAMA_3_70B,
    "Workload": request.Workload,
    "Assumptions": request.Assumptions,
    "estimate": request.estimate,
    "funnel_step": funnel_step,
    "wave_count": wave_count,
    "tokens_per_second": tokens_per_second,
    "cost_per_token_ratio": cost_per_token_ratio,
    "published_speedup": published_speedup,
    "published_value": published_value,
    "measured_gemm": measured_gemm,
    "measured_crossover_m": measured_crossover_m,
    "measured_phase_speedup": measured_phase_speedup,
    "compute_bound_m": compute_bound_m,
    "transposable_patterns": transposable_patterns,
    "first_torch_pinning": first_torch_pinning,
    "decode_gemm_m": request.decode_gemm_m,
    "expert_gemm_m": request.expert_gemm_m,
    "tensor_parallel_shape": request.tensor_parallel_shape,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sum": sum,
    "len": len,
}

_ALLOWED_NODES = (
    ast.Expression, ast.Call, ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.keyword,
    ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Tuple, ast.List, ast.Dict, ast.Subscript, ast.Compare, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.IfExp, ast.BoolOp, ast.And, ast.Or, ast.Not,
)


def evaluate_expression(expr: str, names: Mapping[str, object] | None = None):
    """Evaluate one bank expression in :data:`NAMESPACE` plus ``names`` (earlier numbers).

    Raises :class:`BankError` for syntax outside the small allowed subset, for private names
    (``_x``, ``__class__``) and for unknown names, so a typo names itself.

    >>> evaluate_expression("amdahl.speedup(0.5, 2.0)")
    1.3333333333333333
    >>> evaluate_expression("p * 2", {"p": 0.25})
    0.5
    """
    if not isinstance(expr, str) or not expr.strip():
        raise BankError(f"expr must be a non-empty string, got {expr!r}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise BankError(f"expr {expr!r} is not a Python expression: {err.msg}") from None
    scope = dict(NAMESPACE)
    scope.update(names or {})
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise BankError(f"expr {expr!r} uses {type(node).__name__}, which bank expressions may not use")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise BankError(f"expr {expr!r} reaches the private attribute {node.attr!r}")
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id not in scope):
            raise BankError(
                f"expr {expr!r} uses the unknown name {node.id!r}; known: earlier numbers of the question "
                f"and {sorted(NAMESPACE)}"
            )
    return eval(compile(tree, "<practice>", "eval"), {"__builtins__": {}}, scope)  # noqa: S307 - checked above


def format_value(value, fmt: str) -> str:
    """Format a computed value with a ``str.format`` template such as ``"{:.3f}x"`` or ``"{:.2%}"``.

    >>> format_value(1.61607, "{:.3f}x"), format_value(0.5625, "{:.2%}")
    ('1.616x', '56.25%')
    """
    try:
        return fmt.format(value)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise BankError(f"format {fmt!r} does not apply to value {value!r}: {err}") from None


# ---------------------------------------------------------------------------------------------
# The data model


@dataclass(frozen=True)
class Number:
    """One number a question uses: ``name`` (used as ``{{name}}`` in text), how it is obtained, how it is shown.

    Attributes:
        name: lower_snake_case identifier.
        expr: expression on the toolkit and earlier numbers (see :func:`evaluate_expression`).
        fmt: ``str.format`` template, e.g. ``"{:.3f}x"``.
        label: what the number is, for the numbers table.
        source: a citation, for numbers that come from a published table (the expression then
            reads the toolkit's cited copy of it) or that are given inputs (``"given"``).
    """

    name: str
    expr: str
    fmt: str
    label: str
    source: str | None = None


@dataclass(frozen=True)
class QuickCheck:
    """A numeric self-test: the reader types a value; it is right within ``tolerance`` (relative).

    ``answer`` names one of the question's numbers; ``scale`` converts it to the unit asked for
    (100 for a percentage); ``derivation`` is shown after an attempt; ``basis`` (a key of
    :data:`BASES`) says what the answer key is; ``unit`` is a key of :data:`UNITS`.
    """

    ask: str
    answer: str
    unit: str
    tolerance: float
    derivation: str
    scale: float = 1.0
    basis: str = "first principles"


@dataclass(frozen=True)
class Signals:
    """What a grader listens for: signs of a strong, an acceptable and a weak answer."""

    strong: tuple[str, ...]
    acceptable: tuple[str, ...]
    weak: tuple[str, ...]

    def texts(self) -> list[str]:
        return [*self.strong, *self.acceptable, *self.weak]


@dataclass(frozen=True)
class Question:
    """One practice question. See the module docstring and ``data/practice.yaml``."""

    id: str
    level: str
    topic: str
    title: str
    prompt: str
    rubric: tuple[str, ...]
    answer: str
    mistakes: tuple[str, ...]
    follow_ups: tuple[str, ...]
    connects: str
    numbers: tuple[Number, ...] = ()
    quick_check: QuickCheck | None = None
    chapter: str | None = None
    sources: tuple[str, ...] = field(default_factory=tuple)
    signals: Signals | None = None

    def evaluate(self) -> dict[str, object]:
        """Every number of the question, in order (each may use the ones before it)."""
        return dict(_evaluate_numbers(self))

    def formatted(self) -> dict[str, str]:
        """Every number as the text shows it."""
        values = self.evaluate()
        return {n.name: format_value(values[n.name], n.fmt) for n in self.numbers}

    def placeholders(self) -> set[str]:
        """Names used as ``{{name}}`` anywhere in the question's text."""
        used: set[str] = set()
        for text in self._texts():
            used.update(_PLACEHOLDER.findall(text))
        return used

    def _texts(self) -> list[str]:
        texts = [self.title, self.prompt, self.answer, self.connects, *self.rubric, *self.mistakes, *self.follow_ups]
        if self.quick_check:
            texts += [self.quick_check.ask, self.quick_check.derivation]
        if self.signals:
            texts += self.signals.texts()
        return texts

    def render(self, field_name: str) -> str:
        """One text field (``prompt``, ``answer``, ``connects``, ``title``) with every ``{{name}}`` filled in."""
        if field_name not in TEXT_FIELDS + ("title",):
            raise ValueError(f"field_name must be one of {TEXT_FIELDS + ('title',)}, got {field_name!r}")
        return self.fill(getattr(self, field_name))

    def fill(self, text: str) -> str:
        """``text`` with every ``{{name}}`` replaced by the question's computed, formatted number."""
        shown = self.formatted()

        def sub(m: re.Match) -> str:
            if m.group(1) not in shown:
                raise BankError(f"question {self.id!r}: {{{{{m.group(1)}}}}} is not one of its numbers {sorted(shown)}")
            return shown[m.group(1)]

        return _PLACEHOLDER.sub(sub, text)

    def quick_check_expected(self) -> float:
        """The quick check's right answer in the unit asked for."""
        if self.quick_check is None:
            raise BankError(f"question {self.id!r} has no quick check")
        return float(self.evaluate()[self.quick_check.answer]) * self.quick_check.scale


@functools.lru_cache(maxsize=None)
def _evaluate_cached(question: Question) -> tuple[tuple[str, object], ...]:
    values: dict[str, object] = {}
    for n in question.numbers:
        try:
            values[n.name] = evaluate_expression(n.expr, values)
        except BankError as err:
            raise BankError(f"question {question.id!r}, number {n.name!r}: {err}") from None
        except Exception as err:  # a toolkit error: say where it came from
            raise BankError(f"question {question.id!r}, number {n.name!r}: {n.expr!r} raised {type(err).__name__}: {err}") from err
    return tuple(values.items())


def _evaluate_numbers(question: Question):
    return _evaluate_cached(question)


@dataclass(frozen=True)
class Bank:
    """The questions, in file order, with lookups by id, level and topic."""

    questions: tuple[Question, ...]
    source: str

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self):
        return iter(self.questions)

    def get(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(f"no question with id {qid!r} in {self.source}")

    def by_level(self, level: str) -> list[Question]:
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
        return [q for q in self.questions if q.level == level]

    def by_topic(self, topic: str) -> list[Question]:
        if topic not in TOPICS:
            raise ValueError(f"topic must be one of {sorted(TOPICS)}, got {topic!r}")
        return [q for q in self.questions if q.topic == topic]


# ---------------------------------------------------------------------------------------------
# Loading and validation


# ---------------------------------------------------------------------------------------------
# The bank's structure, as a JSON Schema. Each node carries "x-message": the sentence an author
# reads when that node fails (what was wrong and what is valid); _schema_error() adds where in
# the document it failed and the value found. What a schema cannot say (answers that name a
# number, unique names, placeholders, whole-percent tolerances) is checked in parse_question.


def _text_schema(message: str) -> dict:
    return {"type": "string", "pattern": r"\S", "x-message": message}


def _texts_schema(key: str, low: int, high: int) -> dict:
    return {"type": "array", "minItems": low, "maxItems": high,
            "items": _text_schema(f"{key}[{{index}}] must be non-empty text"),
            "x-message": f"{key!r} must be a list of {low}-{high} texts", "x-count": f"{key!r} must have {low}-{high} entries"}


def _object_schema(properties: dict, required: list[str], message: str, unknown: str) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False,
            "x-message": message, "x-unknown": unknown}


_NUMBER_KEYS = ("name", "expr", "fmt", "label", "source")
_QUICK_CHECK_KEYS = ("ask", "answer", "unit", "tolerance", "derivation", "scale", "basis")
_SIGNAL_KEYS = ("strong", "acceptable", "weak")
_QUESTION_KEYS = ("id", "level", "topic", "title", "prompt", "rubric", "answer", "mistakes", "follow_ups", "connects",
                  "numbers", "quick_check", "chapter", "sources", "signals")

_NUMBER_SCHEMA = _object_schema(
    {
        "name": {"type": "string", "pattern": _NAME.pattern, "x-message": "number name must be lower_snake_case"},
        "expr": {"anyOf": [{"type": "string", "pattern": r"\S"}, {"type": "number"}],
                 "x-message": "number {name!r} needs an expr"},
        "fmt": {"type": "string", "pattern": r"\{", "x-message": "number {name!r}: fmt must be a format template like '{{:.3f}}'"},
        "label": _text_schema("number {name!r} needs a label"),
        "source": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": r"\S"}],
                   "x-message": "number {name!r}: source must be text"},
    },
    ["name", "expr", "label"], "each number must be a mapping",
    "unknown number keys {unknown}; valid: " + ", ".join(_NUMBER_KEYS),
)
_QUICK_CHECK_SCHEMA = _object_schema(
    {
        "ask": _text_schema("'ask' must be non-empty text"),
        "answer": {"type": "string", "x-message": "quick_check.answer must name one of the question's numbers"},
        "unit": {"enum": sorted(UNITS), "x-message": f"quick_check.unit must be one of {sorted(UNITS)} "
                                                     "(bytes as MB/MiB/GB/GiB explicitly)"},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5,
                      "x-message": "quick_check.tolerance must be a relative tolerance in (0, 0.5)"},
        "derivation": _text_schema("'derivation' must be non-empty text"),
        "scale": {"type": "number", "exclusiveMinimum": 0, "x-message": "quick_check.scale must be a positive number"},
        "basis": {"enum": sorted(BASES), "x-message": f"quick_check.basis must be one of {sorted(BASES)} "
                                                      "(never a model's prediction)"},
    },
    ["ask", "answer", "derivation", "basis"], "quick_check must be a mapping",
    "unknown quick_check keys {unknown}; valid: " + ", ".join(_QUICK_CHECK_KEYS),
)
_SIGNALS_SCHEMA = _object_schema(
    {key: _texts_schema(key, 1, 4) for key in _SIGNAL_KEYS}, list(_SIGNAL_KEYS),
    "signals must be a mapping with strong, acceptable and weak lists",
    "unknown signals keys {unknown}; valid: " + ", ".join(_SIGNAL_KEYS),
)
QUESTION_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "one question of the practice bank (twofour/course/data/practice.yaml)",
    **_object_schema(
        {
            "id": {"type": "string", "pattern": _ID.pattern, "x-message": "id must be lower-case-with-dashes"},
            "level": {"enum": list(LEVELS), "x-message": f"level must be one of {LEVELS}"},
            "topic": {"enum": sorted(TOPICS), "x-message": f"topic must be one of {sorted(TOPICS)}"},
            "title": _text_schema("'title' must be non-empty text"),
            "prompt": _text_schema("'prompt' must be non-empty text"),
            "rubric": _texts_schema("rubric", 3, 6),
            "answer": _text_schema("'answer' must be non-empty text"),
            "mistakes": _texts_schema("mistakes", 1, 5),
            "follow_ups": _texts_schema("follow_ups", 1, 3),
            "connects": _text_schema("'connects' must be non-empty text"),
            "numbers": {"anyOf": [{"type": "null"}, {"type": "array", "items": _NUMBER_SCHEMA}],
                        "x-message": "numbers must be a list"},
            "quick_check": {"anyOf": [{"type": "null"}, _QUICK_CHECK_SCHEMA], "x-message": "quick_check must be a mapping"},
            "chapter": {"type": ["string", "null"], "x-message": "chapter must be a path such as notebooks/06-amdahl.ipynb"},
            "sources": {"anyOf": [{"type": "null"}, {"type": "array", "items": {
                            "type": "string", "x-message": "sources must be a list of texts"}}],
                        "x-message": "sources must be a list of texts"},
            "signals": _SIGNALS_SCHEMA,
        },
        ["id", "level", "topic", "title", "prompt", "rubric", "answer", "mistakes", "follow_ups", "connects", "signals"],
        "must be a mapping", "unknown keys {unknown}; valid: " + str(sorted(_QUESTION_KEYS)),
    ),
}
BANK_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["questions"], "properties": {"questions": {"type": "array"}},
    "x-message": "expected a mapping with a 'questions' list at the top",
}


def _path_text(path) -> str:
    """``numbers[0].fmt`` for the path ``["numbers", 0, "fmt"]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _narrowest(error):
    """The error to report: inside an anyOf, the branch that got furthest (a wrong item in a list
    beats "not null"); otherwise the error itself."""
    if error.validator == "anyOf" and error.context:
        deepest = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        if len(deepest.absolute_path) > len(error.absolute_path) or "x-message" in deepest.schema:
            return _narrowest(deepest)
    return error


def _schema_error(error, where: str, document=None) -> BankError:
    """A BankError for one jsonschema error: where, the path in the document, what is wrong and valid."""
    error = _narrowest(error)
    path = list(error.absolute_path)
    schema, instance = error.schema, error.instance
    if error.validator == "required":
        missing = next(p for p in error.validator_value if p not in instance)
        path, schema, instance = path + [missing], schema["properties"][missing], None
    name, node = None, document  # the name of the nearest enclosing number, for its messages
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, Mapping) and "name" in node:
            name = node["name"]
    fields = {"name": name, "index": path[-1] if path and isinstance(path[-1], int) else ""}
    if error.validator == "additionalProperties":
        unknown = sorted(set(instance) - set(schema.get("properties", {})))
        message = schema["x-unknown"].format(unknown=unknown)
    elif error.validator in ("minItems", "maxItems") and "x-count" in schema:
        message = f"{schema['x-count']}, got {len(instance)}"
    else:
        template = schema.get("x-message") or error.message
        got = type(instance).__name__ if schema.get("type") in ("array", "object") else repr(instance)
        message = f"{template.format(**fields)}, got {got}"
    at = f" (at {_path_text(path)})" if path else ""
    return BankError(f"{where}{at}: {message}")


@functools.lru_cache(maxsize=None)
def _validator(which: str):
    import jsonschema

    schema = QUESTION_SCHEMA if which == "question" else BANK_SCHEMA
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _answer_schema(raw) -> dict:
    """QUESTION_SCHEMA with quick_check.answer restricted to the names of the question's numbers."""
    numbers = raw.get("numbers") if isinstance(raw, Mapping) else None
    names = sorted({n.get("name") for n in numbers if isinstance(n, Mapping) and isinstance(n.get("name"), str)}
                   if isinstance(numbers, list) else set())
    schema = copy.deepcopy(QUESTION_SCHEMA)
    quick_check = schema["properties"]["quick_check"]["anyOf"][1]
    quick_check["properties"]["answer"] = {
        "enum": names, "x-message": f"quick_check.answer must name one of the question's numbers {names}"}
    return schema


def _validate(raw, which: str, where: str) -> None:
    validator = _validator(which)
    if which == "question" and isinstance(raw, Mapping) and isinstance(raw.get("quick_check"), Mapping):
        validator = type(validator)(_answer_schema(raw))
    error = next(iter(validator.iter_errors(raw)), None)
    if error is not None:
        raise _schema_error(error, where, raw)


def _require(cond: bool, where: str, message: str) -> None:
    if not cond:
        raise BankError(f"{where}: {message}")


def parse_question(raw, index: int, source: str | None = None) -> Question:
    """One question from its YAML mapping; :class:`BankError` names what is wrong.

    The structure is checked against :data:`QUESTION_SCHEMA` (JSON Schema); what relates one
    field to another is checked here. The error names the file (``source``, when given), the
    question, the path inside it, what was wrong and what is valid.
    """
    prefix = f"{source}: " if source else ""
    qid = raw.get("id") if isinstance(raw, Mapping) else None
    ok_id = isinstance(qid, str) and bool(_ID.match(qid))
    where = prefix + (f"question {qid!r}" if ok_id else f"question #{index + 1}")
    _validate(raw, "question", where)
    numbers = tuple(
        Number(n["name"], (repr(n["expr"]) if not isinstance(n["expr"], str) else n["expr"]).strip(), n.get("fmt", "{}"),
               n["label"].strip(), n["source"].strip() if n.get("source") else None)
        for n in raw.get("numbers") or []
    )
    names = [n.name for n in numbers]
    _require(len(names) == len(set(names)), where, f"number names must be unique, got {names}")
    quick_check = None
    if raw.get("quick_check") is not None:
        qc = raw["quick_check"]
        answer, tol = qc["answer"], qc.get("tolerance", 0.01)  # the schema checked answer is in names
        # The page's checker reports the tolerance in whole percent; a finer one would read "within 0%".
        _require(abs(tol * 100 - round(tol * 100)) < 1e-9, where + " (at quick_check.tolerance)",
                 f"quick_check.tolerance must be a whole percent (0.01, 0.02, ...), as the page reports it, got {tol!r}")
        quick_check = QuickCheck(qc["ask"].strip(), answer, qc.get("unit", ""), float(tol), qc["derivation"].strip(),
                                 float(qc.get("scale", 1.0)), qc["basis"])
    signals = raw["signals"]
    q = Question(
        id=qid,
        level=raw["level"],
        topic=raw["topic"],
        title=raw["title"].strip(),
        prompt=raw["prompt"].strip(),
        rubric=tuple(t.strip() for t in raw["rubric"]),
        answer=raw["answer"].strip(),
        mistakes=tuple(t.strip() for t in raw["mistakes"]),
        follow_ups=tuple(t.strip() for t in raw["follow_ups"]),
        connects=raw["connects"].strip(),
        numbers=numbers,
        quick_check=quick_check,
        chapter=raw.get("chapter"),
        sources=tuple(s.strip() for s in raw.get("sources") or []),
        signals=Signals(*(tuple(t.strip() for t in signals[key]) for key in _SIGNAL_KEYS)),
    )
    missing = q.placeholders() - set(names)
    _require(not missing, where, f"text uses {{{{...}}}} names that are not numbers of the question: {sorted(missing)}")
    return q


def _bank_text(path) -> tuple[str, str]:
    if path is None:
        ref = resources.files("twofour.course") / "data" / DEFAULT_BANK
        return ref.read_text(encoding="utf-8"), f"twofour/course/data/{DEFAULT_BANK}"
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} is not a file; expected a practice bank in YAML")
    return path.read_text(encoding="utf-8"), str(path)


def load_bank(path=None) -> Bank:
    """Load and validate the bank (default: the one shipped in ``twofour/course/data``).

    Validation is structural (fields, levels, topics, placeholders); numbers are computed
    lazily by :meth:`Question.evaluate`, which the tests call for every question.
    """
    import yaml

    text, source = _bank_text(path)
    data = yaml.safe_load(text)
    _validate(data, "bank", source)
    questions = tuple(parse_question(raw, i, source) for i, raw in enumerate(data["questions"]))
    ids = [q.id for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BankError(f"{source}: question ids must be unique, repeated: {dupes}")
    return Bank(questions, source)


# ---------------------------------------------------------------------------------------------
# Rendering to Markdown for the site (the hook site_hooks/practice.py calls these)


def _attr(text: str) -> str:
    return html.escape(text, quote=True)


def _shown_in_table(value) -> bool:
    """Numbers, text and small tuples are shown; intermediate objects (an estimate, a prediction) are not."""
    return isinstance(value, (int, float, str, tuple))


def _numbers_table(q: Question) -> str:
    shown = q.formatted()
    values = q.evaluate()
    rows = ["| quantity | value | how it is obtained |", "|---|---|---|"]
    for n in q.numbers:
        if not _shown_in_table(values[n.name]):
            continue
        how = f"`{n.expr}`"
        if n.source:
            how += f" ({n.source})"
        rows.append(f"| {n.label} | {shown[n.name]} | {how.replace('|', '&#124;')} |")
    return "\n".join(rows)


def _unit_phrase(unit: str) -> str:
    return f"{_attr(UNITS.get(unit, unit))}, " if UNITS.get(unit, unit) else ""


def _tolerance_phrase(tol: float) -> str:
    """The tolerance as the page's checker reports it: a whole percent of the computed value."""
    return f"within ±{round(tol * 100)}% of the computed value"


def render_markdown(q: Question, *, heading_level: int = 2, chapter_prefix: str = "../") -> str:
    """One question as a Markdown card (``md_in_html``), the same on the level pages and in practice mode.

    The card carries ``data-*`` attributes the practice script reads; without JavaScript it is a
    readable page: the rubric and the worked answer are collapsible ``<details>``.
    """
    h = "#" * heading_level
    lines = [
        f'<article class="practice-q" id="q-{q.id}" data-qid="{q.id}" data-level="{q.level}" '
        f'data-topic="{q.topic}" markdown="1">',
        "",
        f"{h} {q.fill(q.title)} {{: .practice-title }}",
        "",
        f'<p class="practice-meta"><span class="practice-tag">{LEVELS.index(q.level) + 1} · {q.level}</span> '
        f'<span class="practice-tag">{_attr(TOPICS[q.topic])}</span></p>',
        "",
        q.fill(q.prompt),
        "",
        f'<div class="practice-notes" data-qid="{q.id}"></div>',
        "",
        '<details class="practice-rubric" markdown="1">',
        "<summary>What a strong answer contains</summary>",
        "",
    ]
    lines += [f"1. {q.fill(point)}" for point in q.rubric]
    lines += ["", "</details>", "", '<details class="practice-answer" markdown="1">', "<summary>Worked answer</summary>", ""]
    lines += [q.fill(q.answer), ""]
    if q.signals:
        lines += ['<details class="practice-signals" markdown="1">',
                  "<summary>For a grader: strong, acceptable and weak signals</summary>", ""]
        for label, items in (("Strong", q.signals.strong), ("Acceptable", q.signals.acceptable),
                             ("Weak", q.signals.weak)):
            lines += [f"**{label}**", ""] + [f"- {q.fill(s)}" for s in items] + [""]
        lines += ["</details>", ""]
    if q.numbers:
        lines += ["**The numbers**, computed by `twofour` when this page was built:", "", _numbers_table(q), ""]
    lines += ["**Common mistakes**", ""] + [f"- {q.fill(m)}" for m in q.mistakes] + [""]
    lines += ["**Follow-ups**", ""] + [f"- {q.fill(f)}" for f in q.follow_ups] + [""]
    lines += [f"**How it connects to the question.** {q.fill(q.connects)}", ""]
    if q.chapter:
        page = q.chapter
        lines += [f"Read more: [the chapter]({chapter_prefix}{page}).", ""]
    if q.sources:
        lines += ["Sources: " + "; ".join(q.fill(s) for s in q.sources), ""]
    lines += ["</details>", ""]
    if q.quick_check:
        c = q.quick_check
        expected = q.quick_check_expected()
        lines += [
            f'<div class="practice-check" data-expected="{expected!r}" data-tolerance="{c.tolerance!r}" '
            f'data-unit="{_attr(c.unit)}" markdown="1">',
            "",
            f'<p class="practice-check-ask" id="check-{q.id}-ask"><strong>Quick check.</strong> {_attr(q.fill(c.ask))}'
            + f" ({_unit_phrase(c.unit)}{_tolerance_phrase(c.tolerance)}; graded against {BASES[c.basis]})"
            + "</p>",
            "",
            '<details class="practice-derivation" markdown="1">',
            "<summary>Derivation</summary>",
            "",
            q.fill(c.derivation),
            "",
            "</details>",
            "",
            "</div>",
            "",
        ]
    lines += ["</article>", ""]
    return "\n".join(lines)
