"""Lab 3, "Dispatch detective": checkers for diagnosing and fixing layers that should be fast.

Seven prepared linear layers (:func:`suspects`) each come with a story: "we pruned it, it
should be 2x faster". None of them will be. The learner writes:

* ``diagnose(suspect)``: the main reason, one of :data:`REASONS`;
* ``make_packable(W)``: a weight ``to_sparse_semi_structured`` accepts and runs correctly (half
  precision, contiguous, zero-padded, pruned only if not 2:4);
* ``proof(fn)``: the class of the matmul that ran and its time per call;
* ``where_did_the_2x_go(ph)``: the stage of a recorded H200 decode trace that ate the 2x;
* ``rebuild(compressed, bitmask, shape)``: the dense weight of a compressed-tensors 2:4 checkpoint.

>>> from twofour.course.labs import lab3
>>> sorted(lab3.suspects())[:3]
['A: the pruned MLP', 'B: the float32 layer', 'C: the transposed export']
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch

from ...device import environment
from ...dispatch import default_backend, explain, hypothetical_gpu, probe
from ...dispatch.kernels import CLASSES, kernels
from ...structure import check, prune
from ._common import CheckFailed, exercise_check

__all__ = [
    "REASONS",
    "STAGES",
    "trace_cases",
    "check_where",
    "Suspect",
    "suspects",
    "target",
    "check_diagnose",
    "check_make_packable",
    "check_proof",
    "reference_diagnose",
    "check_rebuild",
    "CHECKPOINTS",
]

CHECKPOINTS = ("sparse24-fp16", "sparse24-bf16", "sparse24-fp8", "sparse24-int8")

REASONS = ("not-packed", "dtype", "wrong-axis", "not-2:4", "too-small", "not-contiguous", "padding")


@dataclass(frozen=True)
class Suspect:
    """A prepared layer: its weight, the activation shape it serves, and the story told about it."""

    name: str
    W: torch.Tensor
    x_shape: tuple[int, int]
    story: str

    def __repr__(self) -> str:
        return f"Suspect({self.name!r}, W {tuple(self.W.shape)} {str(self.W.dtype).replace('torch.', '')}, x {self.x_shape})"


def target():
    """Where verdicts are judged: this GPU if it has sparse tensor cores, else a hypothetical A100
    (so the lab runs on a laptop)."""
    return probe() if environment().sparse_ok else hypothetical_gpu((8, 0), name="A100 (hypothetical)")


def _pruned(N: int, K: int, seed: int, dtype=torch.float16) -> torch.Tensor:
    return prune(torch.randn(N, K, generator=torch.Generator().manual_seed(seed)))[0].to(dtype)


def suspects() -> dict[str, Suspect]:
    """The seven layers, by name. Each call builds fresh tensors (deterministic, seeded)."""
    g = torch.Generator().manual_seed(3)
    unstructured = torch.randn(256, 512, generator=g)
    unstructured = (unstructured * (torch.rand(256, 512, generator=g) < 0.5)).half()
    return {s.name: s for s in (
        Suspect("A: the pruned MLP", _pruned(512, 256, 1), (256, 256),
                "Pruned to 2:4 with a mask, saved, loaded, served. Half the weights are zero!"),
        Suspect("B: the float32 layer", _pruned(256, 256, 2, torch.float32), (256, 256),
                "2:4 pruned and kept in float32 'for accuracy'."),
        Suspect("C: the transposed export", _pruned(512, 256, 3).t().contiguous(), (256, 512),
                "Exported from a framework that stores weights as [in, out]; pruned 2:4 there, transposed back."),
        Suspect("D: the 50% layer", unstructured, (256, 512),
                "Magnitude-pruned to exactly 50% sparsity, layer by layer."),
        Suspect("E: the tiny head", _pruned(8, 256, 5), (256, 256),
                "A classifier head with 8 outputs, pruned like everything else."),
        Suspect("F: the tied projection", _pruned(256, 512, 6).t().contiguous().t(), (256, 512),
                "Shares its storage with another layer through a transposed view."),
        Suspect("G: the decode step", _pruned(512, 512, 7), (1, 512),
                "Packs and runs sparse, but serves one token per call (decoding)."),
    )}


# Each suspect's answer, and a hint: the row of explain() that gives it away.
_ANSWERS = {
    "A: the pruned MLP": ("not-packed", "explain(...) finds nothing wrong with packing it; read its first "
                          "row (packed) and the verdict's path"),
    "B: the float32 layer": ("dtype", "read the dtype row of explain(...) for the default backend"),
    "C: the transposed export": ("wrong-axis", "the structure row says the groups break 2:4; call "
                                 "twofour.check on W and on W.t() and compare"),
    "D: the 50% layer": ("not-2:4", "the structure row says the groups break 2:4; is W.t() any better?"),
    "E: the tiny head": ("too-small", "read the shape row of explain(...): compare N with the backend's "
                         "minimum"),
    "F: the tied projection": ("not-contiguous", "look at W.stride() and the contiguous row of explain(...)"),
    "G: the decode step": ("padding", "packing works here (if_packed is sparse); read the padding row: how "
                           "many of the kernel's rows are real tokens?"),
}


def reference_diagnose(suspect: Suspect, on=None) -> str:
    """The reference diagnosis, derived from explain() the way the lab asks (used in tests)."""
    W = suspect.W
    v = explain(W, suspect.x_shape, target=on or target())
    for topic, reason in (("dtype", "dtype"), ("contiguous", "not-contiguous"), ("shape", "too-small")):
        if topic in v.topics:
            return reason
    if "structure" in v.topics:
        return "wrong-axis" if W.shape[0] % 4 == 0 and check(W.t().contiguous()).valid else "not-2:4"
    if "padding" in v.topics and v.M_padded and v.M_padded > v.M:
        return "padding"
    return "not-packed"


@exercise_check("diagnose")
def check_diagnose(diagnose) -> str:
    """Run ``diagnose`` on every suspect; the first wrong one raises a hint."""
    for name, suspect in suspects().items():
        got = diagnose(suspect)
        if got not in REASONS:
            raise CheckFailed(f"suspect {name!r}: diagnose returned {got!r}; return one of {REASONS}")
        answer, hint = _ANSWERS[name]
        if got != answer:
            raise CheckFailed(f"suspect {name!r}: {got!r} is not the main reason. Hint: {hint}.")
    return f"all {len(_ANSWERS)} suspects diagnosed"


def _problem(W_ready, W, on) -> str | None:
    """Why W_ready is not an acceptable fix of W, or None."""
    if not isinstance(W_ready, torch.Tensor):
        return f"make_packable returned {type(W_ready).__name__}, not a tensor"
    if W_ready.dtype not in (torch.float16, torch.bfloat16):
        return f"W_ready is {W_ready.dtype}; the default backend wants float16 or bfloat16"
    N, K = W.shape
    if W_ready.dim() != 2 or W_ready.shape[0] < N or W_ready.shape[1] < K:
        return f"W_ready has shape {tuple(W_ready.shape)}; it must keep all {N} x {K} of W (pad, never crop)"
    v = explain(W_ready, 256, target=on)
    if not v.would_be_sparse or v.problems("wrong"):
        return f"explain(W_ready) still finds: {', '.join(t for t in v.topics if t not in ('packed', 'padding'))}"
    core = W_ready[:N, :K].float()
    if bool(W_ready[N:].any()) or bool(W_ready[:, K:].any()):  # empty when nothing was padded: any() is False
        return "the padding must be zeros, so the extra outputs are zero and the real ones unchanged"
    original = W.to(W_ready.dtype).float()
    kept = core != 0
    if not torch.equal(core[kept], original[kept]):
        return "W_ready changed values of W; only casting, zero padding and pruning are allowed"
    was_valid = check(W.contiguous(), max_examples=0, max_locations=0).valid
    if was_valid and not torch.equal(core, original):
        return "W was already 2:4 (along K), but W_ready dropped some of its values; prune only weights that need it"
    if not was_valid:
        # The magnitude-pruned W keeps the 2 largest of every group; a fix may not keep smaller ones.
        best = prune(W.contiguous().to(W_ready.dtype))[0].float()
        if best.abs().sum() > core.abs().sum() * (1 + 1e-3):
            return "the pruned weight keeps less magnitude than magnitude pruning would: keep the 2 largest |values| per group"
    return None


@exercise_check("make_packable")
def check_make_packable(make_packable) -> str:
    """Every suspect's weight, after ``make_packable``, must pack to a correct sparse kernel."""
    on = target()
    cases = {name: s.W for name, s in suspects().items()} | {
        "an already perfect layer": _pruned(256, 256, 11),
        "a bfloat16 layer 40 wide": _pruned(64, 40, 12, torch.bfloat16),  # K=40: pad to the column multiple
    }
    for name, W in cases.items():
        before = W.clone()
        W_ready = make_packable(W)
        if not torch.equal(W, before):
            raise CheckFailed(f"case {name!r}: make_packable modified its input in place; return a new tensor")
        if problem := _problem(W_ready, W, on):
            raise CheckFailed(f"case {name!r}: {problem}")
    return f"all {len(cases)} weights pack to a correct sparse kernel on {on.env.gpu_name or 'this machine'}"


@exercise_check("proof")
def check_proof(proof) -> str:
    """``proof(fn)`` must return ``(gemm_class, ms_per_call)`` matching the profiler."""
    g = torch.Generator().manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    W = prune(torch.randn(256, 512, generator=g))[0].to(device, dtype)
    x = torch.randn(128, 512, generator=g).to(device, dtype)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Sparse CSR tensor support is in beta.*")
        W_csr = W.float().cpu().to_sparse_csr()
    x_t = x.float().cpu().t().contiguous()
    cases = {
        "dense layer with 2:4 zeros": (lambda: torch.nn.functional.linear(x, W), "dense-gemm"),
        "CSR matmul on the CPU": (lambda: torch.sparse.mm(W_csr, x_t), "sparse-general"),
    }
    if environment().sparse_ok:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*prototype.*")
            Ws = torch.sparse.to_sparse_semi_structured(W.half())
        cases["packed 2:4 layer"] = (lambda: torch.nn.functional.linear(x.half(), Ws), f"sparse-{default_backend()}")
    for name, (fn, expected) in cases.items():
        got = proof(fn)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise CheckFailed(f"case {name!r}: return a tuple (gemm_class, ms_per_call), got {got!r}")
        cls, ms = got
        if cls not in CLASSES:
            raise CheckFailed(f"case {name!r}: {cls!r} is not a class of twofour.dispatch.kernels; see CLASSES")
        if cls != expected:
            raise CheckFailed(
                f"case {name!r}: {cls!r} is not the class that ran. Hint: profile fn with kernels(fn) and pick the "
                "matmul class with the most time (report.gemm_class), not the first row"
            )
        if not (isinstance(ms, (int, float)) and math.isfinite(ms) and ms > 0):
            raise CheckFailed(f"case {name!r}: the time must be a positive number of ms per call, got {ms!r}")
        if not _near_profiler_time(proof, fn, expected, ms):
            raise CheckFailed(
                f"case {name!r}: {ms!r} ms is far from what the profiler measures; use report.time_ms_per_call(cls) "
                "(milliseconds, not microseconds)"
            )
    return f"the profiler's proof is right for all {len(cases)} cases"


def _near_profiler_time(proof, fn, expected: str, ms: float, tries: int = 3) -> bool:
    """Whether ``ms`` is within a factor of 200 of what the profiler measures for ``expected``.

    Only a unit slip (x1000) should fail; a timing preempted by another process can be hundreds of
    times longer, so a miss is re-measured (``proof`` and profiler) up to ``tries`` times.
    """
    for attempt in range(tries):
        if attempt:
            ms = proof(fn)[1]
        reference = kernels(fn).time_ms_per_call(expected)
        if reference / 200 <= ms <= reference * 200:
            return True
    return False


# --- Exercise 4: read a trace ------------------------------------------------------------------

STAGES = ("dispatch", "host", "kernel")

# name -> (2:4 run, dense baseline, answer, hint); runs recorded on an H200 (twofour.dispatch.trace.recorded)
_TRACES = {
    "eager 2:4 decode": ("sparse-eager", "dense-eager", "host", "the 2:4 GEMMs did lose here, but compare "
                         "ph.comparison.end_to_end with ph.comparison.amdahl (what the GEMMs alone "
                         "explain), and read ph.idle_fraction"),
    "graph-replayed 2:4 decode": ("sparse-graph", "dense-graph", "kernel", "the GPU is busy almost the whole "
                                  "step (ph.idle_fraction); what does ph.comparison.gemm_speedup say?"),
    "the checkpoint nobody packed": ("dense-eager", "dense-eager", "dispatch",
                                     "before timing anything: how many 2:4 kernels ran (ph.sparse_gemms)?"),
}


def trace_cases() -> dict:
    """The decode phase of three recorded runs, each analysed against its dense baseline.

    Each value is a :class:`twofour.dispatch.trace.PhaseReport` (``.comparison`` set). "The
    checkpoint nobody packed" is the dense trace itself.

    >>> sorted(trace_cases())
    ['eager 2:4 decode', 'graph-replayed 2:4 decode', 'the checkpoint nobody packed']
    """
    from ...dispatch.trace import Comparison, analyze, recorded

    out = {}
    for name, (run, base, _, _) in _TRACES.items():
        if run != base:
            out[name] = analyze(recorded(run), baseline=recorded(base)).phase("decode")
            continue
        # analyze refuses the same trace twice; here that is the point (the unpacked checkpoint
        # runs the dense kernels), so the comparison of the run with itself is built directly.
        ph = out[name] = analyze(recorded(run)).phase("decode")
        ph.comparison = Comparison(
            baseline_path=str(recorded(base)), dense_wall_us=ph.wall_us, sparse_wall_us=ph.wall_us,
            dense_gemm_us=ph.gemm_us, sparse_gemm_us=ph.gemm_us, dense_p=ph.p,
            dense_idle_fraction=ph.idle_fraction, baseline_sparse_gemms=0)
    return out


@exercise_check("where_did_the_2x_go")
def check_where(where_did_the_2x_go) -> str:
    """Run ``where_did_the_2x_go`` on each recorded run; the first wrong stage raises a hint."""
    for name, ph in trace_cases().items():
        got = where_did_the_2x_go(ph)
        if got not in STAGES:
            raise CheckFailed(f"case {name!r}: where_did_the_2x_go returned {got!r}; return one of {STAGES}")
        _, _, answer, hint = _TRACES[name]
        if got != answer:
            raise CheckFailed(f"case {name!r}: {got!r} is not the stage that lost the most. Hint: {hint}.")
    return f"all {len(_TRACES)} recorded runs traced to the stage that ate the 2x"


def _stored_layers(name: str):
    """(layer, compressed, bitmask, shape, expected dense) for each bitmask-stored weight of a shipped folder."""
    from importlib.resources import files

    from safetensors.torch import load_file

    from ... import checkpoint

    root = files("twofour") / "data" / "compressed-tensors"
    expected = load_file(str(root / f"{name}.expected.safetensors"))
    with checkpoint.open(str(root / name)) as reader:
        for weight in sorted(n for n in reader.names() if reader.stored(n).form == "sparse-24-bitmask"):
            parts = [reader.raw(p).clone() for p in reader.stored(weight).parts]  # compressed, bitmask, shape
            yield (weight[: -len(".weight")], *parts, expected[weight])


@exercise_check("rebuild")
def check_rebuild(rebuild) -> str:
    """Run ``rebuild`` on every stored weight of the four shipped folders; the first wrong one raises a hint."""
    n = 0
    for name in CHECKPOINTS:
        for layer, values, bits, shape, want in _stored_layers(name):
            got = rebuild(values.clone(), bits.clone(), shape.clone())
            where = f"{name}, {layer}"
            if not isinstance(got, torch.Tensor):
                raise CheckFailed(f"{where}: rebuild returned {type(got).__name__}; return a torch.Tensor")
            if tuple(got.shape) != tuple(want.shape):
                raise CheckFailed(f"{where}: shape {tuple(got.shape)}; the dense shape is what the .shape tensor holds "
                                  "(it is stored as a column, [[N], [K]])")
            if got.dtype != want.dtype:
                raise CheckFailed(f"{where}: dtype {got.dtype}; keep the dtype of the stored values (no casts)")
            if got.element_size() == 1:  # fp8 and int8: compare the bytes
                got, want = got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8)
            if not torch.equal(got, want):
                hint = "each row's bits are little-endian: element k of a row is bit k % 8 of byte k // 8 of that row"
                if got.element_size() > 1 and bool(((got.reshape(-1, 4) != 0).sum(-1) > 2).any()):
                    hint = "some group of four holds more than two values: only the bitmask's set bits get values"
                raise CheckFailed(f"{where}: the values are not where compressed-tensors puts them. Hint: {hint}")
            n += 1
    return f"{n} stored weights rebuilt bit for bit, in fp16, bf16, fp8 and int8"

