"""`make mutate`: a measured mutation score for the toolkit modules (issue 21).

mutmut (the ``mutate`` extra) makes one-token changes ("mutants") to the modules the site's
numbers come from and runs the fast Python tests that reach each changed function. A mutant the
tests fail on is *killed*; one they pass is a *survivor*: a plausible bug nobody would notice.
Every survivor must either get a test that kills it or be listed, with a reason, in
``tests/mutants-equivalent.toml`` (a change that cannot alter behaviour).

There are about 6,500 mutants in these modules, far more than 2 cores can run in half an hour,
so by default each module contributes a fixed, deterministic sample: its mutants ordered by
a hash of their names, the first ``--sample`` of them. The same code gives the same sample, so
scores before and after a change are comparable. ``--sample all`` runs every mutant.

    python scripts/mutate_report.py run    [--modules structure,amdahl] [--sample 40|all] [--seed 0] [--budget 1800]
    python scripts/mutate_report.py report [--modules ...] [--sample ...]   # from the last run's results

``run`` stops mutmut after ``--budget`` seconds (the mutants it did not reach are reported as
"not run"), then prints the report. Results live in ``mutants/`` (git-ignored), which ``run``
empties first: mutmut's map of tests to functions, reused from an earlier run, named 1 test for
a function renamed since (76 under its old name), and its mutants "survived" tests that kill them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT_FILE = ROOT / "tests" / "mutants-equivalent.toml"

# Short name -> source files (a package's modules, __init__ left out: it only re-exports).
# These are the modules whose formulas and checks the site shows.
MODULES: dict[str, tuple[str, ...]] = {
    "structure": ("src/twofour/structure.py",),
    "packing": tuple(f"src/twofour/packing/{m}.py" for m in ("packed", "nbytes", "cutlass", "explain")),
    "roofline": tuple(f"src/twofour/roofline/{m}.py" for m in ("model", "params", "scenarios", "fitting", "tiles")),
    "amdahl": ("src/twofour/amdahl.py",),
    "request": tuple(f"src/twofour/request/{m}.py" for m in ("workload", "gemm", "measured", "inputs", "evaluate", "sensitivity")),
    "explain": ("src/twofour/dispatch/explain.py",),
    "practice": tuple(f"src/twofour/course/practice/{m}.py"
                      for m in ("helpers", "expressions", "questions", "schema", "load", "render")),
}
DEFAULT_SAMPLE = 40
DEFAULT_BUDGET_S = 1800


def _not_mutated(modules: list[str]) -> list[str]:
    """Files of ``modules`` missing from pyproject's ``[tool.mutmut] only_mutate``: mutmut makes no
    mutants of them, so every sampled mutant of theirs would be reported as "not run"."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return [p for m in modules for p in MODULES[m] if p not in config.get("only_mutate", [p])]


def missing_test_paths(config: dict | None = None) -> list[str]:
    """Test files and ``--deselect`` node ids of ``[tool.mutmut] pytest_add_cli_args_test_selection``
    that do not exist: pytest then stops before any mutant is tested (a moved test file did that).

    >>> missing_test_paths({"pytest_add_cli_args_test_selection": ["tests/none.py", "-k", "not x"]})
    ['tests/none.py']
    """
    if config is None:
        config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    args = config.get("pytest_add_cli_args_test_selection", [])
    # a path is a bare argument or the value of --deselect; any other option's value (-k) is not
    paths = [a for before, a in zip([None] + args, args)
             if not a.startswith("-") and (before is None or before == "--deselect" or not before.startswith("-"))]
    return [a for a in paths if not (ROOT / a.split("::", 1)[0]).is_file()]


def _module_mutants(paths: tuple[str, ...]) -> list[str]:
    """Every mutant mutmut makes of one module's files, in file order."""
    return [name for path in paths for name in _mutmut_names(path)]


def _path_of(name: str, paths: tuple[str, ...]) -> str:
    """The file of ``paths`` a mutant belongs to (its name starts with the file's dotted module path)."""
    for path in paths:
        dotted = ".".join(Path(path).relative_to("src").with_suffix("").parts)
        if name.startswith(dotted + "."):
            return path
    raise ValueError(f"mutant {name} is in none of {paths}")


def _mutmut_names(path: str) -> list[str]:
    """Every mutant mutmut makes of one file, by its full name (``twofour.amdahl.x_speedup__mutmut_3``)."""
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import get_mutant_name

    source = (ROOT / path).read_text()
    mutated = mutate_file_contents(path, source, None, None)
    return [get_mutant_name(Path(path), name) for name in mutated.mutant_names]


def sample(names: list[str], size: int | None, seed: int = 0) -> list[str]:
    """The first ``size`` names ordered by SHA-256: deterministic, and a name keeps its place
    while its function is unchanged (mutmut numbers mutants per function). Another ``seed``
    draws another sample: a check that tests written for one sample generalise."""
    salt = f"{seed}:" if seed else ""
    ordered = sorted(names, key=lambda n: hashlib.sha256((salt + n).encode()).hexdigest())
    return ordered if size is None else sorted(ordered[:size])


def selected(modules: list[str], size: int | None, seed: int = 0) -> dict[str, list[str]]:
    return {m: sample(_module_mutants(MODULES[m]), size, seed) for m in modules}


def run_mutmut(names: list[str], budget_s: float) -> None:
    """Run mutmut on ``names`` with one worker; interrupt it (as Ctrl-C would) when the budget is spent."""
    cmd = [str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", "1", *names]
    print(f"mutmut: {len(names)} mutants, budget {budget_s:.0f} s", flush=True)
    log = open(ROOT / "mutants" / "mutmut-run.log", "w") if (ROOT / "mutants").is_dir() else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        code = proc.wait(timeout=budget_s)
        if code != 0:
            # e.g. "failed to collect stats": a selected test fails on the unmutated code inside
            # mutants/, and nothing was mutated. Say so instead of reporting every mutant as not run.
            tail = (ROOT / "mutants" / "mutmut-run.log").read_text(errors="replace")[-1500:].split("\r")[-1]
            raise SystemExit(f"mutmut stopped with exit code {code} before testing mutants; the end of "
                             f"mutants/mutmut-run.log:\n{tail}")
    except subprocess.TimeoutExpired:
        print("mutmut: budget spent, stopping (the rest are reported as not run)", flush=True)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --------------------------------------------------------------------------------------------
# Reading the results


def _changed_lines(name: str, path: str) -> tuple[str, str]:
    """The removed and added source lines of a mutant (stripped), from mutmut's diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=path)
    minus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(minus), " / ".join(plus)


def _function_of(name: str) -> str:
    return name.rsplit("__mutmut_", 1)[0]


def load_equivalents() -> list[dict]:
    """``[[equivalent]]`` entries: ``function``, ``removed``, ``added`` (the changed line before
    and after, stripped) and ``reason``. Matched by content, not by mutmut's number, so an entry
    survives mutmut renumbering the mutants of a function."""
    if not EQUIVALENT_FILE.exists():
        return []
    entries = tomllib.loads(EQUIVALENT_FILE.read_text()).get("equivalent", [])
    for e in entries:
        missing = {"function", "removed", "added", "reason"} - set(e)
        if missing:
            raise SystemExit(f"{EQUIVALENT_FILE.name}: entry {e} lacks {sorted(missing)}")
    return entries


def _exit_codes() -> dict[str, int | None]:
    import json

    codes: dict[str, int | None] = {}
    for meta in (ROOT / "mutants" / "src").rglob("*.py.meta"):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def report(chosen: dict[str, list[str]]) -> str:
    from mutmut.stats import status_by_exit_code

    codes = _exit_codes()
    equivalents = load_equivalents()
    lines = ["Mutation score per module (mutmut; killed = a test failed or timed out on the mutant)", ""]
    header = f"{'module':<10} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'equiv':>5} {'not run':>7}  score"
    lines += [header, "-" * len(header)]
    survivors: list[str] = []
    matched: list[str] = []
    used = set()
    totals = [0] * 6
    for module, names in chosen.items():
        paths = MODULES[module]
        counts = dict(killed=0, timeout=0, survived=0, equiv=0, not_run=0)
        for name in names:
            status = status_by_exit_code[codes.get(name)]
            if status == "killed":
                counts["killed"] += 1
            elif status == "timeout":
                counts["timeout"] += 1
            elif status in ("not checked", "check was interrupted by user"):
                counts["not_run"] += 1
            else:  # survived, no tests, suspicious, segfault: not killed by a test
                removed, added = _changed_lines(name, _path_of(name, paths))
                hit = next((i for i, e in enumerate(equivalents) if e["function"] == _function_of(name)
                            and e["removed"] == removed and e["added"] == added), None)
                if hit is None:
                    counts["survived"] += 1
                    survivors.append(f"{name} [{status}]\n    - {removed}\n    + {added}")
                else:
                    counts["equiv"] += 1
                    used.add(hit)
                    matched.append(f"{name}\n    - {removed}\n    + {added}\n    why: {equivalents[hit]['reason']}")
        run = len(names) - counts["not_run"] - counts["equiv"]
        score = (counts["killed"] + counts["timeout"]) / run if run else float("nan")
        lines.append(f"{module:<10} {len(names):>7} {counts['killed']:>6} {counts['timeout']:>7} {counts['survived']:>8} "
                     f"{counts['equiv']:>5} {counts['not_run']:>7}  {score:6.1%}")
        for i, k in enumerate(("killed", "timeout", "survived", "equiv", "not_run")):
            totals[i] += counts[k]
        totals[5] += len(names)
    run = totals[5] - totals[4] - totals[3]
    score = (totals[0] + totals[1]) / run if run else float("nan")
    lines += ["-" * len(header),
              f"{'all':<10} {totals[5]:>7} {totals[0]:>6} {totals[1]:>7} {totals[2]:>8} {totals[3]:>5} {totals[4]:>7}  {score:6.1%}",
              "", "score = (killed + timeout) / (mutants - equivalent - not run)", ""]
    lines += [f"Surviving mutants ({len(survivors)}):"] + (survivors or ["  none"]) + [""]
    lines += [f"Equivalent mutants in this sample ({len(matched)}, from {EQUIVALENT_FILE.relative_to(ROOT)}):"]
    lines += matched or ["  none"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--modules", default=",".join(MODULES),
                        help=f"comma-separated, from {', '.join(MODULES)} (default: all)")
    parser.add_argument("--sample", default=str(DEFAULT_SAMPLE),
                        help=f"mutants per module, or 'all' (default {DEFAULT_SAMPLE})")
    parser.add_argument("--seed", type=int, default=0,
                        help="another seed draws another sample of the same size (default 0)")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                        help=f"seconds mutmut may run (default {DEFAULT_BUDGET_S})")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)

    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = [m for m in modules if m not in MODULES]
    if unknown or not modules:
        parser.error(f"--modules: unknown {unknown or modules}; choose from {', '.join(MODULES)}")
    if args.sample == "all":
        size = None
    elif args.sample.isdigit() and int(args.sample) > 0:
        size = int(args.sample)
    else:
        parser.error(f"--sample must be a positive int or 'all', got {args.sample!r}")
    if args.budget <= 0:
        parser.error(f"--budget must be > 0 seconds, got {args.budget}")

    os.chdir(ROOT)  # mutmut reads pyproject.toml and writes mutants/ in the working directory
    missing = _not_mutated(modules)
    if missing:
        raise SystemExit(f"pyproject.toml [tool.mutmut] only_mutate lacks {', '.join(missing)}: mutmut would make no "
                         "mutants of it and its sampled mutants would all be 'not run'; add it there")
    gone = missing_test_paths()
    if gone:
        raise SystemExit(f"pyproject.toml [tool.mutmut] pytest_add_cli_args_test_selection names {', '.join(gone)}, "
                         "which do not exist: pytest would stop before testing any mutant; fix the paths there")
    chosen = selected(modules, size, args.seed)
    if args.command == "run":
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        (ROOT / "mutants").mkdir()
        names = [n for ns in chosen.values() for n in ns] if size is not None else [
            n.rsplit(".", 1)[0] + ".*" for n in (ns[0] for ns in chosen.values() if ns)]
        start = time.monotonic()
        run_mutmut(names, args.budget)
        print(f"mutmut: {time.monotonic() - start:.0f} s", flush=True)
    text = report(chosen)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
