"""Read compressed-tensors checkpoints (LLM Compressor's format) as data: the config and the stored 2:4 forms.

``config.json``'s ``quantization_config`` (``quant_method: "compressed-tensors"``) says how the
weights are stored: its ``sparsity_config`` names the format, the ``sparsity_structure``
(``"2:4"``) and the modules covered (``targets`` minus ``ignore``); its ``format`` or
``config_groups.*.format`` may be ``marlin-24``. As compressed-tensors 0.14.0 writes them:

* **sparse-24-bitmask** replaces ``<layer>.weight`` by ``<layer>.compressed`` (the kept values,
  ``[N, K/2]``, the weight's dtype), ``<layer>.bitmask`` (uint8 ``[N, ceil(K/8)]``, one bit per
  dense element, little-endian, see :mod:`._bitmask`) and ``<layer>.shape`` (int64 ``[2, 1]``:
  N, K). A quantized weight keeps its ``weight_scale`` (and zero point, ``input_scale``) beside them.
* **marlin-24** replaces it by ``weight_packed`` (int32, eight int4 values each),
  ``scale_packed`` (fp16, ``[K/group, N]``) and ``meta`` (int16, 2 bits per kept value),
  permuted for the Marlin kernel, the only thing that reads it.
* **sparse-bitmask** (``BitmaskConfig``, any pattern): ``compressed`` holds the non-zero values
  1-D, beside ``bitmask``, ``shape`` and ``row_offsets``; rebuilt, then checked like a dense weight.
* **pack-quantized** (W4A16, W8A16; LLM Compressor's 2:4 W4A16 recipe keeps
  ``sparsity_config.format: dense`` with ``sparsity_structure: "2:4"``): ``weight_packed`` (int32
  ``[N, ceil(K * bits / 32)]``, values offset to unsigned, lowest bits first, as ``pack_to_int32``
  writes them), ``weight_shape``, ``weight_scale`` and, when asymmetric, ``weight_zero_point``
  packed the same way along N. A weight is zero where its integer equals its zero point, so
  :func:`count_24` reads 2:4 structure from the integers, never dequantized.
* **int-quantized** and **float-quantized** keep ``<layer>.weight`` (int8, fp8) with its scale:
  read as the dense weights they are.

:class:`StoredView` (what :func:`twofour.checkpoint.open` returns) shows one logical
``<layer>.weight`` per stored weight, rebuilt and checked (:mod:`._bitmask`) only when asked; a
file whose parts disagree is refused with a :class:`~twofour.checkpoint.file.CheckpointError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from .._common.text import printable
from ._pattern import PatternError, compile_pattern
from ._bitmask import (BITMASK_PARTS, CompressedError, check_bitmask, check_sizes, decompress, decompress_unstructured,
                       pack_bitmask, unpack_bitmask)
from .file import Checkpoint, Closing, detect_format, open_checkpoint
from .folder import ModelFiles, open_model

__all__ = [
    "CompressionConfig", "parse_config", "StoredView", "decompress", "pack_bitmask",
    "unpack_bitmask", "BITMASK_PARTS", "MARLIN_PARTS", "Reader", "open", "as_reader", "weight_kind",
]

MARLIN_PARTS = ("weight_packed", "scale_packed", "meta")
# Tensors a quantization scheme stores beside a weight: not weights themselves.
_QUANT_PARAMS = ("weight_scale", "weight_zero_point", "weight_g_idx", "input_scale", "input_zero_point",
                 "output_scale", "output_zero_point", "weight_global_scale", "input_global_scale")
_FORMATS = ("dense", "sparse-24-bitmask", "sparse-bitmask", "marlin-24")
_MAX_PATTERN = 200


@dataclass(frozen=True)
class CompressionConfig:
    """What ``config.json``'s ``quantization_config`` says, as plain data: ``sparsity_format`` is None
    without a ``sparsity_config``; ``quant_formats`` the quantization formats named (``marlin-24``...);
    ``weights`` a short description of the weight quantization (``"int4, group 128"``) or None."""

    version: str | None
    sparsity_format: str | None
    sparsity_structure: str | None
    targets: tuple[str, ...]
    ignore: tuple[str, ...]
    quant_formats: tuple[str, ...]
    weights: str | None

    @property
    def claims_24(self) -> bool:
        return (self.sparsity_structure == "2:4" or self.sparsity_format in ("sparse-24-bitmask", "marlin-24")
                or "marlin-24" in self.quant_formats)

    def describe(self) -> str:
        """One line; every string from the file escaped (a config may hold terminal control sequences)."""
        e = lambda text: printable(text, 80)  # noqa: E731
        parts = [f"compressed-tensors {e(self.version or '(version not stated)')}"]
        if self.sparsity_format:
            parts.append(f"sparsity {e(self.sparsity_format)} ({e(self.sparsity_structure or 'structure not stated')}) on "
                         f"{', '.join(map(e, self.targets)) or 'no targets'}"
                         + (f", ignoring {', '.join(map(e, self.ignore))}" if self.ignore else ""))
        if self.quant_formats:
            parts.append(f"quantization {', '.join(map(e, self.quant_formats))}" + (f" ({e(self.weights)})" if self.weights else ""))
        return "; ".join(parts)

    def covers(self, layer: str, kind: str) -> bool:
        """Whether the sparsity config's targets (minus ignore) cover ``layer`` (a module name).

        ``"Linear"`` covers every linear weight, ``"re:<regex>"`` is matched as ``re.match`` would,
        without backtracking (:mod:`._pattern`), anything else must equal the name. Other class
        names cannot be known without the model's code, so they cover nothing here.

        >>> ct = parse_config({"quantization_config": {"quant_method": "compressed-tensors",
        ...     "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4",
        ...                         "targets": ["Linear"], "ignore": ["re:.*mlp[.]gate$", "lm_head"]}}})
        >>> ct.covers("model.layers.0.mlp.gate", "linear"), ct.covers("model.layers.0.mlp.up_proj", "linear")
        (False, True)
        """
        return matches(self.targets, layer, kind) and not self.ignores(layer, kind)

    def ignores(self, layer: str, kind: str = "linear") -> bool:
        """Whether the sparsity config's ``ignore`` names ``layer`` (in any spelling: exact, ``re:``, class)."""
        return matches(self.ignore, layer, kind)


def matches(patterns, layer: str, kind: str) -> bool:
    """Whether any of a recipe's ``targets``/``ignore`` entries names ``layer``; see :meth:`CompressionConfig.covers`."""
    for p in patterns:
        try:
            hit = compile_pattern(p[3:])(layer) if p.startswith("re:") else (
                kind == "linear" if p == "Linear" else p == layer)
        except PatternError as exc:
            raise CompressedError(f"config.json: the regex {printable(p, 80)!r} cannot be matched against "
                                  f"{printable(layer, 80)!r} within twofour's bound: {exc}") from None
        if hit:
            return True
    return False


def check_claim(ct: CompressionConfig | None, name: str, kind: str, n_groups: int, n_bad: int, path: str) -> None:
    """Refuse a file whose config claims 2:4 for the weight ``name`` while ``n_bad`` of its groups break it.

    >>> check_claim(None, "fc.weight", "linear", 8, 3, "m")  # no config: nothing claimed
    """
    if ct is not None and ct.claims_24 and n_bad and ct.covers(name.removesuffix(".weight"), kind):
        raise CompressedError(
            f"{printable(path, 120)}: config.json claims sparsity_structure 2:4 for {printable(name, 120)}, but "
            f"{n_bad:,} of {n_groups:,} of its groups of four hold more than two non-zeros; the file does not match "
            "its config"
        )


def _strings(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CompressedError(f"config.json: {where} must be a list of strings, got {printable(repr(value), 80)}")
    for v in value:
        if len(v) > _MAX_PATTERN:
            raise CompressedError(f"config.json: {where} holds a pattern of {len(v)} characters (at most {_MAX_PATTERN})")
        if v.startswith("re:"):
            try:
                compile_pattern(v[3:])
            except re.error as exc:
                raise CompressedError(f"config.json: {where} holds an invalid regex {printable(v, 80)!r} ({exc})") from None
            except PatternError as exc:
                raise CompressedError(f"config.json: {where} holds the regex {printable(v, 80)!r}, which twofour does not "
                                      f"run: {exc}") from None
            except RecursionError:
                raise CompressedError(f"config.json: {where} holds a regex nested too deeply: {printable(v, 80)!r}") from None
    return tuple(value)


def _opt_str(value, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise CompressedError(f"config.json: {where} must be a string, got {printable(repr(value), 80)}")


def parse_config(config) -> CompressionConfig | None:
    """The compressed-tensors part of a parsed ``config.json``, or None when it has none.

    >>> parse_config({"quantization_config": {"quant_method": "compressed-tensors", "version": "0.14.0",
    ...     "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4",
    ...                         "targets": ["Linear"], "ignore": ["lm_head"]}}}).describe()
    'compressed-tensors 0.14.0; sparsity sparse-24-bitmask (2:4) on Linear, ignoring lm_head'
    """
    if not isinstance(config, dict):
        return None
    compile_pattern.cache_clear()  # fresh matchers, so the bound on matching work (MAX_WORK) is per checkpoint opened
    q = config.get("quantization_config", config.get("compression_config"))
    if not isinstance(q, dict) or q.get("quant_method") != "compressed-tensors":
        return None
    s = q.get("sparsity_config") or {}
    if not isinstance(s, dict):
        raise CompressedError("config.json: quantization_config.sparsity_config must be an object")
    fmt = _opt_str(s.get("format"), "sparsity_config.format")
    if fmt is not None and fmt not in _FORMATS:
        raise CompressedError(
            f"config.json: sparsity_config.format {printable(fmt, 60)!r} is not one twofour reads ({', '.join(_FORMATS)})"
        )
    top = _opt_str(q.get("format"), "quantization_config.format")
    formats, weights = [top] if top else [], None
    groups = q.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise CompressedError("config.json: quantization_config.config_groups must be an object")
    for group in groups.values():
        if not isinstance(group, dict):
            continue
        gf = _opt_str(group.get("format"), "config_groups.*.format")
        if gf and gf not in formats:
            formats.append(gf)
        w = group.get("weights")
        if isinstance(w, dict) and weights is None:
            bits, typ, strat, gs = w.get("num_bits"), w.get("type"), w.get("strategy"), w.get("group_size")
            weights = f"{typ}{bits}" + (f", {strat}" if isinstance(strat, str) else "") + (f" {gs}" if isinstance(gs, int) else "")
    return CompressionConfig(
        version=_opt_str(q.get("version"), "quantization_config.version"),
        sparsity_format=fmt,
        sparsity_structure=_opt_str(s.get("sparsity_structure"), "sparsity_config.sparsity_structure") if s else None,
        targets=_strings(s.get("targets"), "sparsity_config.targets"),
        ignore=_strings(s.get("ignore"), "sparsity_config.ignore"),
        quant_formats=tuple(formats),
        weights=weights,
    )


def bits_of(packed_cols: int, K: int) -> int | None:
    """The bits per value that make ``K`` values fill ``packed_cols`` int32 columns (4 or 8), or None."""
    return next((bits for bits in (4, 8) if packed_cols == -(-K * bits // 32)), None)


def unpack_ints(packed: torch.Tensor, bits: int, rows: int, cols: int) -> torch.Tensor:
    """``[rows, cols]`` int8 signed values from int32 words packed along the last dimension."""
    per = 32 // bits
    shifts = torch.arange(per, dtype=torch.int32) * bits
    u = (packed.to(torch.int32).unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    return (u.reshape(packed.shape[0], -1)[:rows, :cols] - (1 << (bits - 1))).to(torch.int8)


def count_24(packed: torch.Tensor, shape, zero_point: torch.Tensor | None, layer: str) -> tuple[int, int]:
    """``(groups of four along K, groups with more than two non-zero weights)`` of a pack-quantized weight
    (``weight_packed``'s shape and dtype checked against ``shape`` when the checkpoint was opened).

    >>> q = torch.tensor([[0, 3, 0, -2, 0, 0, 1, 1]], dtype=torch.int8)
    >>> packed = ((q.to(torch.int32) + 8) << (4 * torch.arange(8, dtype=torch.int32))).sum(-1, keepdim=True, dtype=torch.int32)
    >>> unpack_ints(packed, 4, 1, 8).tolist()
    [[0, 3, 0, -2, 0, 0, 1, 1]]
    >>> count_24(packed, (1, 8), None, "fc")
    (2, 0)
    """
    N, K = shape
    name = printable(layer, 120)
    bits = bits_of(packed.shape[1], K)
    if K % 4:
        raise CompressedError(f"{name}: K = {K} is not a multiple of 4, so it cannot be 2:4 along K")
    q = unpack_ints(packed, bits, N, K)
    if zero_point is None:
        nonzero = q != 0
    else:
        if zero_point.dim() != 2 or zero_point.dtype != torch.int32 or zero_point.shape[1] < 1 or K % zero_point.shape[1]:
            raise CompressedError(f"{name}: weight_zero_point must be int32 [ceil(N*bits/32), groups] with K a multiple "
                                  f"of the groups, got {'x'.join(map(str, zero_point.shape))}")
        groups = zero_point.shape[1]
        zp = unpack_ints(zero_point.t().contiguous(), bits, groups, N).t()  # packed along N
        nonzero = q != zp.repeat_interleave(K // groups, dim=1)
    return N * K // 4, int((nonzero.reshape(N, K // 4, 4).sum(-1) > 2).sum())


def _dense_shape(shape_tensor: torch.Tensor, layer: str) -> tuple[int, int]:
    if shape_tensor.numel() != 2 or shape_tensor.dtype not in (torch.int64, torch.int32):
        raise CompressedError(
            f"{printable(layer, 120)}.shape must hold two integers (N, K), got {shape_tensor.numel()} of "
            f"{str(shape_tensor.dtype).replace('torch.', '')}"
        )
    N, K = (int(v) for v in shape_tensor.flatten().tolist())
    if N < 1 or K < 1:
        raise CompressedError(f"{printable(layer, 120)}.shape says {N}x{K}; a weight has positive sizes")
    return N, K


@dataclass(frozen=True)
class Stored:
    """How one logical weight is stored: ``form`` (``dense``, ``sparse-24-bitmask``, ``marlin-24``), the
    tensors holding it and their bytes on disk, and its scales (names) when quantized."""

    form: str
    parts: tuple[str, ...]
    stored_bytes: int
    scales: tuple[str, ...] = ()


def _bitmask_weight(f, head: str, parts) -> tuple:
    """sparse-24-bitmask (three parts, 2-D values) or sparse-bitmask (four, 1-D values of any pattern)."""
    values, bits, shape = parts[:3]
    any_pattern = len(parts) == 4
    if f.dtype(bits) != torch.uint8 or len(f.shape(bits)) != 2 or len(f.shape(values)) != 2 - any_pattern:
        raise CompressedError(f"{printable(head, 120)}: " + ("sparse-bitmask needs a 2-D uint8 bitmask and 1-D values"
                              if any_pattern else "the bitmask must be 2-D uint8 and the values 2-D"))
    N, K = _dense_shape(f.tensor(shape), head)
    if not any_pattern:
        check_sizes(head, N, K, f.shape(values), f.shape(bits))
    elif tuple(f.shape(bits)) != (N, (K + 7) // 8):
        raise CompressedError(f"{printable(head, 120)}: the bitmask is {'x'.join(map(str, f.shape(bits)))}, but a "
                              f"{N}x{K} weight needs {N}x{(K + 7) // 8}; the shape and the bitmask disagree")
    return (N, K), f.dtype(values)


def _packed_weight(f, head: str, parts) -> tuple:
    packed, shape = parts
    N, K = _dense_shape(f.tensor(shape), head)
    ps = f.shape(packed)
    bits = bits_of(ps[1], K) if len(ps) == 2 and f.dtype(packed) == torch.int32 and ps[0] == N else None
    if bits is None:
        raise CompressedError(f"{printable(head, 120)}: weight_packed {'x'.join(map(str, ps))} "
                              f"{printable(str(f.dtype(packed)), 20)} does not hold a {N}x{K} weight of 4- or 8-bit "
                              "values packed in int32")
    return (N, K), f"int{bits} (pack-quantized)"


def _marlin_weight(f, head: str, parts) -> tuple:
    packed, scales, meta = parts
    ps, ss, ms = f.shape(packed), f.shape(scales), f.shape(meta)
    if f.dtype(packed) != torch.int32 or f.dtype(meta) != torch.int16 or len(ss) != 2 or len(ps) != 2:
        raise CompressedError(f"{printable(head, 120)}: marlin-24 needs int32 weight_packed, int16 meta and 2-D scales")
    N = int(ss[1])
    kept = ps[0] * ps[1] * 8  # eight int4 values per int32
    if N < 1 or kept % N or (2 * kept // N) % 128:
        raise CompressedError(
            f"{printable(head, 120)}: weight_packed {'x'.join(map(str, ps))} does not fit {N} outputs with K a multiple of 128"
        )
    K = 2 * kept // N
    if ms[0] * ms[1] * 16 != kept * 2:
        raise CompressedError(
            f"{printable(head, 120)}: meta holds {ms[0] * ms[1] * 16:,} bits, but {kept:,} kept values need {kept * 2:,} "
            "(2 bits each); the parts disagree"
        )
    return (N, K), "int4 (marlin-24)"


# Names that mark an embedding table in common checkpoints (Llama, GPT-2, BERT, T5...).
# Embeddings are lookups, not GEMMs, so 2:4 kernels never apply to them.
EMBEDDING_MARKERS = ("embed", "wte", "wpe", "word_embeddings", "position_embeddings", "token_type_embeddings",
                     "shared.weight")

# Hugging Face models whose linear layers are ``Conv1D``: the weight is stored [in_features, out_features].
CONV1D_MODEL_TYPES = ("gpt2", "openai-gpt", "imagegpt", "decision_transformer")
_CONV1D_LAYER = re.compile(r"(^|\.)(c_attn|c_proj|c_fc|q_attn)\.weight$")


def weight_kind(name: str, shape: tuple[int, ...]) -> str | None:
    """``"linear"``, ``"embedding"``, or None when the tensor is not a 2-D weight (by its name and shape).

    >>> weight_kind("layers.0.mlp.up_proj.weight", (14336, 4096)), weight_kind("embed_tokens.weight", (8, 8))
    ('linear', 'embedding')
    >>> weight_kind("fc.weight#2", (8, 8))  # a second tensor whose name collided keeps its kind
    'linear'
    >>> weight_kind("notaweight", (8, 8)), weight_kind("weight", (8, 8))  # the last name part must be "weight"
    (None, 'linear')
    """
    base = re.sub(r"#\d+$", "", name)
    if len(shape) != 2 or not (base == "weight" or base.endswith(".weight")):
        return None
    return "embedding" if any(m in name.lower() for m in EMBEDDING_MARKERS) else "linear"


def is_conv1d(config, name: str) -> bool:
    """Whether ``name`` is a Hugging Face ``Conv1D`` weight ([in, out]) in a model whose ``config.json`` is ``config``.

    >>> is_conv1d({"model_type": "gpt2"}, "transformer.h.0.attn.c_attn.weight"), is_conv1d({}, "h.0.attn.c_attn.weight")
    (True, False)
    """
    return isinstance(config, dict) and config.get("model_type") in CONV1D_MODEL_TYPES and bool(_CONV1D_LAYER.search(name))


# Each stored form: the parts that replace <layer>.weight, and how its dense shape and dtype are read (and the
# parts checked against each other). Tried in this order: sparse-bitmask's parts include sparse-24-bitmask's.
_STORED_FORMS = {
    "sparse-bitmask": ((*BITMASK_PARTS, "row_offsets"), _bitmask_weight),  # BitmaskConfig
    "sparse-24-bitmask": (BITMASK_PARTS, _bitmask_weight),
    "marlin-24": (MARLIN_PARTS, _marlin_weight),
    "pack-quantized": (("weight_packed", "weight_shape"), _packed_weight),  # W4A16, W8A16
}


class StoredView(Closing):
    """Opened files seen as logical weights: the :class:`Reader` that :func:`open` and :func:`as_reader` return."""

    def __init__(self, files, config: CompressionConfig | None):
        self.files, self.ct = files, config
        self.path, self.format, self.config = files.path, files.format, files.config
        self.notes: list[str] = list(files.notes)
        self.skipped: list[tuple[str, str]] = list(files.skipped)
        self._logical: dict[str, tuple] = {}  # name -> (shape, dtype, Stored)
        self._order: list[str] = []
        names = files.names()
        prefixes: dict[str, set] = {}
        for n in names:
            head, _, tail = n.rpartition(".")
            prefixes.setdefault(head, set()).add(tail)
        consumed: set[str] = set()
        for n in names:
            if n in consumed:
                continue
            head, _, tail = n.rpartition(".")
            have = prefixes[head]
            scales = tuple(f"{head}.{p}" for p in _QUANT_PARAMS if p in have)
            form = next((form for form, (tails, _) in _STORED_FORMS.items()
                         if head and tail in tails and set(tails) <= have), None)
            if form == "pack-quantized" and set(MARLIN_PARTS) <= have:
                form = None  # marlin-24's weight_packed beside a weight_shape: not pack-quantized
            # two of a three-part form present (one alone is an ordinary tensor)
            partial = next((p for p in (BITMASK_PARTS, MARLIN_PARTS) if tail in p and len(have & set(p)) >= 2),
                           None)
            if form is not None:
                tails, read = _STORED_FORMS[form]
                parts = tuple(f"{head}.{p}" for p in tails)
                shape, dtype = read(files, head, parts)
                stored = Stored(form, parts, sum(files.nbytes(p) for p in parts), scales)
                self._add(f"{head}.weight", shape, dtype, stored)
                consumed.update(parts)
            elif head and partial:
                missing = [p for p in partial if p not in have]
                raise CompressedError(
                    f"{printable(head, 120)}: stored in parts but {', '.join(missing)} is missing (a truncated or "
                    "incomplete checkpoint)"
                )
            elif tail in _QUANT_PARAMS and head:
                self.skipped.append((n, "a quantization parameter (scale or zero point) of its layer, not a weight"))
            else:
                self._add(n, files.shape(n), files.dtype(n), Stored("dense", (n,), files.nbytes(n), scales))
        if config is not None and config.sparsity_format == "sparse-24-bitmask" and not any(
            s.form == "sparse-24-bitmask" for _, _, s in self._logical.values()
        ):
            self.notes.append("config.json names sparse-24-bitmask, but no weight is stored that way")

    def _add(self, name: str, shape, dtype, stored: Stored) -> None:
        self._logical[name] = (shape, dtype, stored)
        self._order.append(name)

    def names(self) -> list[str]:
        return list(self._order)

    def shape(self, name: str):
        return self._logical[name][0]

    def dtype(self, name: str):
        return self._logical[name][1]

    def stored(self, name: str) -> Stored:
        return self._logical[name][2]

    def nbytes(self, name: str) -> int:
        return self.stored(name).stored_bytes

    def prefetch(self, name: str) -> None:
        for p in self.stored(name).parts:
            self.files.prefetch(p)

    def structure(self, name: str) -> tuple[int, int] | None:
        """:meth:`Reader.structure`: from a bitmask (refused unless it keeps two of every four) or packed integers."""
        st = self.stored(name)
        layer = name[: -len(".weight")]
        if st.form == "pack-quantized":
            zero = f"{layer}.weight_zero_point"
            return count_24(self.files.tensor(st.parts[0]), self.shape(name),
                            self.files.tensor(zero) if zero in self.files else None, layer)
        if st.form != "sparse-24-bitmask":
            return None
        N, K = self.shape(name)
        check_bitmask(layer, self.files.tensor(st.parts[1]), K)
        return N * K // 4, 0

    def transposed(self, name: str) -> bool:
        return is_conv1d(self.config, name)

    def raw(self, name: str) -> torch.Tensor:
        return self.files.tensor(name)

    def has_raw(self, name: str) -> bool:
        return name in self.files

    def tensor(self, name: str, out: torch.Tensor | None = None) -> torch.Tensor:
        """The dense weight (rebuilt from its bitmask when stored so, checked on the way; into the uint8 ``out``)."""
        st = self.stored(name)
        if st.form == "dense":
            return self.files.tensor(name)
        if st.form in ("sparse-24-bitmask", "sparse-bitmask"):
            values, bits = (self.files.tensor(p) for p in st.parts[:2])
            if st.form == "sparse-bitmask":
                return decompress_unstructured(values, bits, self.shape(name), name.removesuffix(".weight"))
            return decompress(values, bits, self.shape(name), name.removesuffix(".weight"), out=out)
        if st.form == "pack-quantized":
            raise CompressedError(f"{printable(name, 120)} is stored pack-quantized ({self.dtype(name).split()[0]}): "
                                  "twofour reads its 2:4 structure from the packed integers but does not dequantize it")
        raise CompressedError(f"{printable(name, 120)} is stored marlin-24; only a Marlin kernel reads it (not unpacked here)")

    def close(self) -> None:
        self.files.close()


@runtime_checkable
class Reader(Protocol):
    """What every opened checkpoint offers (implemented by :class:`StoredView`): one logical ``<layer>.weight``
    per stored weight (a bitmask's three parts are one weight), read only when asked for. The audit,
    ``convert``, ``bench --checkpoint`` and the site read checkpoints only so.

    ``format`` is ``"safetensors"``, ``"torch-zip"`` or ``"torch-pickle"``; ``config`` the parsed
    ``config.json`` (or None) and ``ct`` its compressed-tensors part (or None); ``notes`` what a
    report's reader should know, ``skipped`` the ``(name, why)`` of tensors that are not weights.
    """

    path: str
    format: str
    config: dict | None
    ct: CompressionConfig | None
    notes: list[str]
    skipped: list[tuple[str, str]]

    def names(self) -> list[str]:
        """Logical tensor names, in file order."""

    def shape(self, name: str) -> tuple[int, ...]:
        """The dense shape."""

    def dtype(self, name: str):
        """A ``torch.dtype``, or a string when torch has none (``"int4 (marlin-24)"``, a file's dtype code)."""

    def stored(self, name: str) -> Stored:
        """How ``name`` is stored: its form, the tensors holding it, their bytes on disk, its scales."""

    def nbytes(self, name: str) -> int:
        """Bytes of ``name`` on disk (0 when the format does not say)."""

    def prefetch(self, name: str) -> None:
        """Ask the OS to start reading ``name`` now (a hint)."""

    def tensor(self, name: str) -> torch.Tensor:
        """The dense weight (rebuilt and checked when stored compressed)."""

    def structure(self, name: str):
        """``(groups of four along K, groups breaking 2:4)`` when the stored form alone decides it
        (a bitmask: no values read), else None (read :meth:`tensor` and check it)."""

    def transposed(self, name: str) -> bool:
        """True for a weight stored [in_features, out_features] (Hugging Face ``Conv1D``)."""

    def raw(self, name: str) -> torch.Tensor:
        """A tensor of the files as stored (a scale, one part of a compressed weight)."""

    def has_raw(self, name: str) -> bool:
        """Whether the files hold a tensor named ``name`` as stored."""

    def close(self) -> None:
        """Release the files."""


def as_reader(files: Checkpoint | ModelFiles) -> StoredView:
    """A :class:`Reader` over files already opened with ``open_checkpoint`` or ``open_model``."""
    return StoredView(files, parse_config(files.config))


def open(path: str | os.PathLike) -> StoredView:  # noqa: A001 - the room's one way in
    """Open a model folder, a shard index, a safetensors file or a ``torch.save`` file (recognised by its
    first bytes) as a :class:`Reader`; :class:`~twofour.checkpoint.file.CheckpointError` with one line for
    anything it cannot read.

    >>> import tempfile
    >>> from safetensors.torch import save_file
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.safetensors")
    >>> save_file({"fc.weight": torch.zeros(4, 8)}, path)
    >>> with open(path) as r:
    ...     r.names(), r.shape("fc.weight"), r.stored("fc.weight").form, isinstance(r, Reader)
    (['fc.weight'], (4, 8), 'dense', True)
    """
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(".json") or detect_format(path) == "safetensors":
        files = open_model(path)
    else:
        files = open_checkpoint(path)
    try:
        return as_reader(files)
    except BaseException:
        files.close()
        raise
