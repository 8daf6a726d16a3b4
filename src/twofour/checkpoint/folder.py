"""Open a Hugging Face model folder, a shard index or one safetensors file, as data only.

A model folder holds ``config.json`` and either ``model.safetensors`` or shards listed by
``model.safetensors.index.json`` (``{"weight_map": {tensor name: shard file}}``). Everything in
it is read as data: JSON with size and depth limits and duplicate keys refused, and nothing in
the folder is imported or executed (a ``modeling_*.py`` is never looked at).

The index's file names are checked before any is opened: a plain name inside the folder (no
absolute path, no ``..``, no symlink out of it), and every shard must exist, be a regular file
and hold the tensors the index names for it. Each refusal is a :class:`FolderError` with one line.

>>> import json, os, tempfile, torch
>>> from safetensors.torch import save_file
>>> d = tempfile.mkdtemp()
>>> save_file({"fc.weight": torch.zeros(4, 8)}, os.path.join(d, "model.safetensors"))
>>> with open_model(d) as m:
...     m.kind, m.names(), m.shape("fc.weight")
('folder', ['fc.weight'], (4, 8))
"""

from __future__ import annotations

import json
import os
import stat

from .._common.text import printable, show_path as _show
from .file import CheckpointError, Closing, open_checkpoint, stat_or_error

__all__ = ["FolderError", "ModelFiles", "open_model", "read_json", "INDEX_NAME", "CONFIG_NAME"]

INDEX_NAME = "model.safetensors.index.json"
CONFIG_NAME = "config.json"
SINGLE_NAME = "model.safetensors"
# config.json is a few kB; an index lists every tensor name (a 70B model: ~60 kB). Far larger is not one.
_MAX_JSON = 16 * 1024 * 1024
_MAX_DEPTH = 32
_MAX_SHARDS = 10_000


class FolderError(CheckpointError):
    """A model folder, index or config that cannot be used; the message is one line."""


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {printable(key, 80)!r} appears twice")
        out[key] = value
    return out


def _depth(value, limit: int) -> int:
    """Nesting depth of parsed JSON, walked without recursion (stops past ``limit``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


def read_json(path: str, what: str, limit: int = _MAX_JSON):
    """Parse the JSON file ``path`` (``what`` names it in errors): a regular file, at most ``limit`` bytes,
    UTF-8 (a leading byte-order mark is allowed), no duplicate keys, at most 32 levels deep."""
    st = stat_or_error(path, f"no such file ({what})", FolderError)
    if not stat.S_ISREG(st.st_mode):
        raise FolderError(f"{_show(path)}: {what} is not a regular file (a FIFO, device or folder); refused")
    if st.st_size > limit:
        raise FolderError(f"{_show(path)}: {what} is {st.st_size:,} bytes, more than {limit:,}; not a real {what}")
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(limit + 1).decode("utf-8-sig"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError:
        raise FolderError(f"{_show(path)}: {what} is not UTF-8 text") from None
    except RecursionError:
        raise FolderError(f"{_show(path)}: {what} nests deeper than {_MAX_DEPTH} levels; refused") from None
    except ValueError as exc:
        raise FolderError(f"{_show(path)}: {what} is not valid JSON ({printable(str(exc), 160)})") from None
    if _depth(data, _MAX_DEPTH) > _MAX_DEPTH:
        raise FolderError(f"{_show(path)}: {what} nests deeper than {_MAX_DEPTH} levels; refused")
    return data


def _inside(root: str, name, what: str) -> str:
    """The real path of ``name`` (a file the index names), which must stay inside the folder ``root``."""
    if not isinstance(name, str) or not name:
        raise FolderError(f"{_show(what)}: a shard name must be a non-empty string, got {printable(repr(name), 80)}")
    if "\x00" in name or os.path.isabs(name) or any(part == ".." for part in name.replace("\\", "/").split("/")):
        raise FolderError(
            f"{_show(what)}: refused: it names {printable(name, 120)!r}, which is not a file inside the folder "
            "(absolute paths and '..' are not allowed)"
        )
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root, name))
    if os.path.commonpath([real_root, real]) != real_root:
        raise FolderError(
            f"{_show(what)}: refused: {printable(name, 120)!r} is a symlink that leads out of the folder "
            f"(to {_show(real)}); only files inside {_show(root)} are read"
        )
    return real


class ModelFiles(Closing):
    """The tensors of a model folder, index or file: ``kind`` is ``"folder"``, ``"index"`` or ``"file"``;
    ``root`` the folder; ``config`` the parsed ``config.json`` or None; ``files`` the shards, in order."""

    format = "safetensors"

    def __init__(self, kind: str, root: str, config, files: list[str], weight_map: dict | None, label: str):
        self.kind, self.root, self.config, self.files, self.path = kind, root, config, files, label
        self.notes: list[str] = []
        self.skipped: list[tuple[str, str]] = []
        self._open = []
        self._where: dict[str, object] = {}
        try:
            for path in files:
                ckpt = open_checkpoint(path)
                self._open.append(ckpt)
                if ckpt.format != "safetensors":
                    raise FolderError(f"{_show(path)}: a model folder's shards must be safetensors, this is {ckpt.format}")
                for name in ckpt.names():
                    if name in self._where:
                        raise FolderError(
                            f"{_show(path)}: refused: tensor {printable(name, 120)!r} is also in "
                            f"{_show(self._where[name].path)}; a tensor must live in one shard"
                        )
                    self._where[name] = ckpt
            if weight_map is not None:
                self._check_map(weight_map)
        except BaseException:
            self.close()
            raise

    def _check_map(self, weight_map: dict) -> None:
        for name, shard in weight_map.items():
            held = self._where.get(name)
            if held is None or os.path.realpath(held.path) != os.path.realpath(os.path.join(self.root, shard)):
                raise FolderError(
                    f"{_show(self.path)}: the index puts tensor {printable(name, 120)!r} in {printable(shard, 80)!r}, "
                    + ("which does not hold it (a truncated or mismatched shard)" if held is None
                       else f"but it is in {_show(os.path.basename(held.path))}"))
        extra = [n for n in self._where if n not in weight_map]
        if extra:
            self.notes.append(f"{len(extra)} tensors are in the shards but not in the index (first: {printable(extra[0], 80)!r}); audited anyway")

    # The same reading interface as Checkpoint, so the audit reads either.
    def names(self) -> list[str]:
        return [n for ckpt in self._open for n in ckpt.names()]

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def shape(self, name: str) -> tuple[int, ...]:
        return self._where[name].shape(name)

    def dtype(self, name: str):
        return self._where[name].dtype(name)

    def tensor(self, name: str):
        return self._where[name].tensor(name)

    def nbytes(self, name: str) -> int:
        return self._where[name].nbytes(name)

    def prefetch(self, name: str) -> None:
        self._where[name].prefetch(name)

    def close(self) -> None:
        for ckpt in self._open:
            ckpt.close()
        self._open = []


def _config_beside(root: str):
    path = os.path.join(root, CONFIG_NAME)
    if not os.path.lexists(path):
        return None
    _inside(root, CONFIG_NAME, path)
    config = read_json(path, "config.json")
    if not isinstance(config, dict):
        raise FolderError(f"{_show(path)}: config.json must hold a JSON object, got {type(config).__name__}")
    return config


def _from_index(index_path: str, kind: str, label: str) -> ModelFiles:
    root = os.path.dirname(os.path.abspath(index_path))
    index = read_json(index_path, "shard index")
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise FolderError(f"{_show(index_path)}: a shard index needs a non-empty \"weight_map\" object of tensor name -> file")
    shards = list(dict.fromkeys(_inside(root, shard, index_path) for shard in weight_map.values()))  # in index order
    if len(shards) > _MAX_SHARDS:
        raise FolderError(f"{_show(index_path)}: names {len(shards):,} shard files, more than {_MAX_SHARDS:,}; refused")
    for real in shards:
        if not os.path.lexists(real):
            raise FolderError(f"{_show(index_path)}: shard {_show(os.path.relpath(real, os.path.realpath(root)))} is missing")
    return ModelFiles(kind, root, _config_beside(root), shards, weight_map, label)


def open_model(path: str | os.PathLike) -> ModelFiles:
    """Open a model folder (through its index, else its ``model.safetensors``, else its only
    ``*.safetensors``), a ``*.safetensors.index.json`` or one ``.safetensors`` file, with its ``config.json``."""
    path = os.fspath(path)
    st = stat_or_error(path, "no such file or folder", FolderError)
    if stat.S_ISDIR(st.st_mode):
        if os.path.lexists(os.path.join(path, INDEX_NAME)):
            _inside(path, INDEX_NAME, path)
            return _from_index(os.path.join(path, INDEX_NAME), "folder", path)
        candidates = [SINGLE_NAME] if os.path.lexists(os.path.join(path, SINGLE_NAME)) else sorted(
            n for n in os.listdir(path) if n.endswith(".safetensors")
        )
        if len(candidates) != 1:
            found = "no *.safetensors file" if not candidates else f"{len(candidates)} *.safetensors files and no index"
            raise FolderError(f"{_show(path)}: a model folder needs {INDEX_NAME} or one model.safetensors (found {found})")
        real = _inside(path, candidates[0], path)
        return ModelFiles("folder", path, _config_beside(path), [real], None, path)
    if path.endswith(".json"):
        return _from_index(path, "index", path)
    root = os.path.dirname(os.path.abspath(path))
    return ModelFiles("file", root, _config_beside(root), [path], None, path)
