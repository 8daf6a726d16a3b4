"""``twofour calibrate``: fit the kernel model to the GPU run and report its error where it was not fitted.

Reads the recorded GPU runs and the published measurements, fits the tile model
(:mod:`twofour.roofline.calibration`), reports the median error of the predicted speedup per M
regime on the held-out Llama-3-70B shapes and on each published source left out, and with
``--out`` writes the fit as JSON.

    twofour calibrate                                          # report only (about a minute on 2 cores)
    twofour calibrate --out src/twofour/data/kernel-fit.json   # refresh the package's defaults
    python scripts/js_data.py                                  # then the calculators' copy
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="FILE", help="write the fit as JSON (the package default: "
                        "src/twofour/data/kernel-fit.json)")
    parser.add_argument("--points", action="store_true", help="also list every held-out and published point with its error")


def _regimes(rows) -> str:
    return "  ".join(f"{r['regime']:>10} {r['median']:6.1%} (n={r['n']})" for r in rows)


def run(args: argparse.Namespace) -> int:
    from ..roofline import calibration as cal_mod
    from ..roofline.published import FIT_RULES, points

    from ._output import check_output_file, saving, show

    if args.out is not None:  # before the fit: a directory, a FIFO or one of the fit's inputs is refused now
        check_output_file(args.out, "--out", "kernel-fit.json", inputs=cal_mod.fit_inputs())
    pts = points()
    print(f"{len(pts)} points ({sum(p.origin == 'published' for p in pts)} published, "
          f"{sum(p.origin == 'measured' for p in pts)} measured here); the fit uses a point when it is:")
    for rule in FIT_RULES:
        print(f"  - {rule}")
    cal = cal_mod.fit_all(pts)
    info = cal.info
    print(f"\nbase set, fitted on {info['n_fit_points']} points ({info['n_trace_points']} of them GEMM-chain traces); "
          f"rms log error dense {info['dense_rms_log']:.3f}, 2:4 {info['sparse_rms_log']:.3f}:")
    for name, value in cal.base.to_dict().items():
        if isinstance(value, dict):
            tiles = value["tiles"]
            shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in value.items() if k != "tiles"}
            print(f"  {name:20} {len(tiles)} tile row(s), last {tiles[-1][2]}x{tiles[-1][3]}; {shown}")
        else:
            print(f"  {name:20} {round(value, 4) if isinstance(value, float) else value}")
    print("searched algorithm, tile candidates (best first): " + "; ".join(
        f"{t['tile_n']}x{t['tile_m']} split<={t['max_split']}: {t['rms_log']:.3f}" for t in info["searched_tile_trials"]))
    for gpu, params in cal.per_gpu.items():
        print(f"{gpu:8} {cal.notes[gpu]} (2:4 compute_eff {params.cusparselt.compute_eff:.4f})")
    errors = cal_mod.evaluate(pts, cal)
    held = errors["held_out"]
    print(f"\nerror of the predicted speedup, median |predicted / measured - 1|, on {held['label']}:")
    for mode, rows in held["by_mode"].items():
        print(f"  {mode:7} {_regimes(rows)}")
    print(f"  flagged, not counted: {len(held['flagged'])} point(s)")
    bf16 = errors["held_out_bf16"]
    print(f"on {bf16['label']}:")
    for mode, rows in bf16["by_mode"].items():
        if rows:
            print(f"  {mode:7} {_regimes(rows)}")
    pub = errors["published_leave_one_source_out"]
    print(f"published points, each of {pub['n_sources']} sources left out in turn:\n  {_regimes(pub['by_regime'])}")
    print("in the fit set (for comparison, not held out):")
    for dtype, by_mode in errors["in_sample"]["by_dtype"].items():
        for mode, rows in by_mode.items():
            if rows:
                print(f"  {dtype} {mode:7} {_regimes(rows)}")
    if args.points:
        print("\npoint                                                                 measured  predicted  error")
        for r in held["points"] + held["flagged"] + pub["points"]:
            print(f"  {r['id'][-66:]:66} {r['measured']:8.2f}x {r['predicted']:8.2f}x {r['rel_err']:6.0%}"
                  + ("  (flagged)" if r.get("flagged") else ""))
    if args.out is not None:
        with saving("--out", args.out):
            path = cal_mod.save(args.out, pts=pts, cal=cal, errors=errors)
        print(f"\nfit written to {show(path)}; refresh the calculators with `python scripts/js_data.py`")
    return 0
