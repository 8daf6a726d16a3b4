"""Is the hand-written trace reader (``_jsonstream``) needed, or would ijson do? Measured, not argued.

Issue 53 asks for ijson (or plain ``json`` with a size cap) unless a figure shows the hand-written
reader is needed. This script reads the same files three ways, each in a fresh process, and
prints CPU seconds, peak RSS (``VmHWM``) and the outcome:

* **stream**: ``ChromeTraceStream(f).events()`` (the toolkit's reader), counting events;
* **ijson**: ``ijson.items(f, "traceEvents.item", use_float=True)`` with whichever backend ijson
  picks (``yajl2_c`` when its C extension is installed), counting events;
* **json**: ``json.load(f)`` (the whole file in memory).

Files (written to ``--dir``, deleted at the end):

* **events**: the shipped sparse-eager H200 trace's events repeated to ``--mb`` MB of JSON;
* **keys**: ``--keys`` top-level keys, each a 1 MB list of zeros, then a small ``traceEvents`` (the issue-54
  memory attack; the hostile round used 1,500 keys, 1.4 MB gzipped);
* **deep**: one event nested 100,000 arrays deep (a 200 kB file);
* **nan**: a trace whose one kernel has ``"dur": NaN`` (PyTorch's writer emits bare NaN; the
  toolkit counts it as an invalid event instead of refusing the file).

ijson is not a dependency of the toolkit: install it into a side environment and point
``--ijson-python`` at it (its ``ijson`` only, the reader is loaded from its file, standard library
only)::

    python -m venv /tmp/ijvenv && /tmp/ijvenv/bin/pip install ijson
    .venv/bin/python benchmarks/trace_reader.py --ijson-python /tmp/ijvenv/bin/python [--mb 200] [--keys 300]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READER = ROOT / "src" / "twofour" / "dispatch" / "trace" / "_jsonstream.py"
SHIPPED = ROOT / "src" / "twofour" / "data" / "traces" / "h200-20261130-trace-sparse-eager.json.gz"

# Run in a fresh interpreter: argv = reader, file. Prints "events seconds peak_MB" or "error: ...".
CHILD = r"""
import importlib.util, json, sys, time
how, path, reader = sys.argv[1:4]
t0 = time.process_time()
try:
    with open(path, "rb") as f:
        if how == "stream":
            spec = importlib.util.spec_from_file_location("_jsonstream", reader)
            mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
            n = sum(1 for _ in mod.ChromeTraceStream(f).events())
        elif how == "ijson":
            import ijson
            n = sum(1 for _ in ijson.items(f, "traceEvents.item", use_float=True))
        else:
            n = len(json.load(f)["traceEvents"])
    out = f"{n} events"
except BaseException as exc:  # the outcome is what is measured
    out = f"{type(exc).__name__}: {str(exc)[:90]}"
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so it would count the parent's peak
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
print(f"{time.process_time() - t0:.2f}\t{rss:.0f}\t{out}")
"""


def write_files(folder: Path, mb: int, keys: int, which: str) -> dict:
    files = {}
    if "events" in which:
        events = json.loads(gzip.decompress(SHIPPED.read_bytes()))["traceEvents"]
        one = ",".join(json.dumps(e) for e in events)
        p = files["events"] = folder / "events.json"
        with open(p, "w") as f:
            f.write('{"schemaVersion": 1, "traceEvents": [')
            f.write(",".join([one] * max(1, (mb << 20) // len(one))))
            f.write("]}")
    p = files["keys"] = folder / "keys.json"
    value = "[" + ",".join(["0"] * 500_000) + "]"  # 1,000,001 characters: under the reader's 1 MiB per value
    with open(p, "w") as f:
        f.write("{")
        for i in range(keys):
            f.write(f'"k{i}": {value},')
        f.write('"traceEvents": [{"ph": "X"}]}')
    p = files["deep"] = folder / "deep.json"
    p.write_text('{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    p = files["nan"] = folder / "nan.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": NaN, "pid": 0, "tid": 7}]}')
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="size of the events file in MB (default 200)")
    ap.add_argument("--keys", type=int, default=300, help="top-level 1 MB keys in the keys file (default 300)")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--ijson-python", default=sys.executable, help="a Python that has ijson installed")
    ap.add_argument("--files", default="events,keys,deep,nan", help="which files to read (default: all four)")
    ap.add_argument("--reader", default=str(READER), help="the _jsonstream.py to measure (e.g. an older checkout's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        files = write_files(Path(d), args.mb, args.keys, args.files.split(","))
        print("file\tsize MB\treader\tCPU s\tpeak RSS MB\toutcome")
        for what, path in files.items():
            if what not in args.files.split(","):
                continue
            size = os.path.getsize(path) / 1e6
            for how in ("stream", "ijson", "json"):
                python = args.ijson_python if how == "ijson" else sys.executable
                r = subprocess.run([python, "-c", CHILD, how, str(path), args.reader], capture_output=True, text=True)
                print(f"{what}\t{size:.1f}\t{how}\t{r.stdout.strip() or r.stderr.strip()[-120:]}", flush=True)


if __name__ == "__main__":
    main()
