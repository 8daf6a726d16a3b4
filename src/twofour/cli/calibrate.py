"""``twofour calibrate``: fit the kernel model to every usable measurement and report its error.

Reads the published measurements (``twofour/data/published-gemm.json``) and the GPU results
files ``twofour bench`` wrote (``twofour/data/bench-*.json``), fits the model's parameters
(:mod:`twofour.roofline.calibration`), evaluates it leave-one-source-out, prints the fitted
parameters and the error by M regime, GPU and origin, and writes the fit as JSON.

    twofour calibrate                                   # report only
    twofour calibrate --out src/twofour/data/kernel-fit.json   # refresh the package's defaults
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .main import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the fit as JSON (the package default: "
                        "src/twofour/data/kernel-fit.json)")
    parser.add_argument("--points", action="store_true", help="also list every usable point with its error")


def run(args: argparse.Namespace) -> int:
    from ..roofline import calibration as cal_mod
    from ..roofline.published import FIT_RULES, points

    from ._output import check_output_file, show

    if args.out is not None:  # before the fit: a directory, a FIFO or one of the fit's inputs is refused now
        check_output_file(args.out, "--out", "kernel-fit.json", inputs=cal_mod.fit_inputs())
    pts = points()
    usable = [p for p in pts if p.fit_ok]
    print(f"{len(pts)} points ({sum(p.origin == 'published' for p in pts)} published, "
          f"{sum(p.origin == 'measured' for p in pts)} measured here); {len(usable)} usable by these rules:")
    for rule in FIT_RULES:
        print(f"  - {rule}")
    cal = cal_mod.fit_all(pts)
    print(f"\nbase set ({cal.base_source}):")
    for k, v in cal.base.to_dict().items():
        print(f"  {k:20} {v}")
    for gpu, params in cal.per_gpu.items():
        changed = {k: v for k, v in params.to_dict().items() if v != cal.base.to_dict()[k]}
        print(f"{gpu:16} {cal.notes[gpu]}" + (f": {changed}" if changed else ""))
    for line in cal.clamps:
        print(f"clamped: {line}")
    errors = cal_mod.evaluate(pts)
    titles = {
        "published_leave_one_source_out": "published points, each source left out of the fit in turn",
        "measured_leave_one_shape_out": "points measured here, each weight shape left out of the fit in turn",
        "measured_before_refit": "points measured here, predicted by the assumed parameters (the model before the refit)",
        "measured_in_sample": "points measured here, predicted by the fit that saw them",
    }
    print("\nerror of the predicted speedup, |predicted / measured - 1|:")
    for key, title in titles.items():
        print(f"  {title}:")
        for table in ("by_regime", "by_gpu", "by_scenario"):
            for row in errors[key].get(table, []):
                label = row.get("regime") or row.get("gpu") or row.get("scenario")
                print(f"    {label:12} n={row['n']:4}  median {row['median']:7.1%}  p90 {row['p90']:8.1%}")
    if args.points:
        print("\npublished point (its source left out)                        measured  predicted  error")
        for r in errors["published_leave_one_source_out"]["points"]:
            print(f"  {r['id'][:58]:58} {r['measured']:8.2f}x {r['predicted']:8.2f}x {r['rel_err']:6.0%}")
    if args.out is not None:
        from .._common.atomic import OutputError
        from ._output import write_error

        try:
            path = cal_mod.save(args.out)
        except OutputError as exc:
            raise UserError(f"--out {exc}") from None
        except OSError as exc:
            raise write_error("--out", args.out, exc) from None
        print(f"\nfit written to {show(path)}")
    return 0
