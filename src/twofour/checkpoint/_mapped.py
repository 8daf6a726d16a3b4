"""Read a checkpoint's tensor bytes with ``pread``, so that a file truncated while it is read cannot kill the reader.

A memory-mapped file that another process truncates kills the reader with SIGBUS at the next
touch of a page past the new end, which no Python handler can catch. A ``pread`` of the same
bytes returns fewer bytes instead, which becomes one clear error. So the checkpoint reader maps
the file only to learn the tensors' layout (``torch.load(mmap=True)`` touches no page), finds
where each storage lies in the file (:func:`file_offsets`) and hands out copies read with
:func:`read_exact`.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "bytes.bin")
>>> with open(path, "wb") as f:
...     _ = f.write(bytes(range(16)))
>>> fd = os.open(path, os.O_RDONLY)
>>> read_exact(fd, 4, 4).tolist()
[4, 5, 6, 7]
>>> read_exact(fd, 12, 8)
Traceback (most recent call last):
    ...
twofour.checkpoint._mapped.ShortRead: 4 of 8 bytes at offset 12: the file ends there
>>> os.close(fd)
"""

from __future__ import annotations

import bisect
import os

import torch

__all__ = ["ShortRead", "file_offsets", "read_exact", "view_span"]

_CHUNK = 1 << 30  # one pread reads at most this much (Linux caps a read near 2 GiB)


class ShortRead(OSError):
    """The file held fewer bytes than asked for: it shrank (or was replaced) since it was opened."""


def read_exact(fd: int, offset: int, nbytes: int) -> torch.Tensor:
    """``nbytes`` bytes of the open file ``fd`` from ``offset``, as a new uint8 tensor; :class:`ShortRead` when fewer."""
    out = torch.empty(nbytes, dtype=torch.uint8)
    view = memoryview(out.numpy()).cast("B") if nbytes else memoryview(b"")
    done = 0
    while done < nbytes:
        n = os.preadv(fd, [view[done:done + _CHUNK]], offset + done)
        if n <= 0:
            raise ShortRead(f"{done:,} of {nbytes:,} bytes at offset {offset:,}: the file ends there")
        done += n
    return out


def view_span(t: torch.Tensor) -> tuple[int, int]:
    """(first storage element, how many elements) a strided view reads: its extent in its storage.

    >>> base = torch.zeros(10, 8)
    >>> view_span(base[2:4, 1:3]), view_span(torch.ones(4).expand(10**8, 4)), view_span(base[:0])
    ((17, 10), (0, 4), (0, 0))
    """
    if t.numel() == 0:
        return 0, 0
    return t.storage_offset(), 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def file_offsets(fd: int, addresses) -> dict:
    """``{address: offset in the file}`` for each address in this process's memory map of ``fd``'s file,
    from ``/proc/self/maps`` (Linux; elsewhere empty), which names files by device and inode (or path)."""
    st = os.fstat(fd)
    ident = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        own_path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        own_path = None
    spans = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) < 5 or ":" not in parts[3]:
                    continue
                major, minor = (int(x, 16) for x in parts[3].split(":", 1))
                inode = int(parts[4])
                path = parts[5].rstrip("\n") if len(parts) > 5 else ""
                if (major, minor, inode) != ident and not (inode == st.st_ino and own_path and path == own_path):
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-", 1))
                spans.append((lo, hi, int(parts[2], 16)))
    except (OSError, ValueError):
        return {}
    spans.sort()
    starts = [s[0] for s in spans]
    out = {}
    for address in addresses:
        k = bisect.bisect_right(starts, address) - 1
        if k >= 0 and address < spans[k][1]:
            out[address] = address - spans[k][0] + spans[k][2]
    return out
