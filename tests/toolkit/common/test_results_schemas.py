"""Every JSON data file the toolkit reads is checked against a JSON Schema; a broken file gets
one line naming the kind of file, the place inside it and what is wrong."""

from __future__ import annotations

import json
import pytest

from twofour import bench
from twofour.dispatch.kernels import recorded_reports
from twofour.roofline import _fitfile, published
from twofour.roofline._fitfile import FIT_PATH

DATA = FIT_PATH.parent


def _copy_edited(src, dst, edit):
    data = json.loads(src.read_text())
    edit(data)
    dst.write_text(json.dumps(data))
    return dst


def test_shipped_files_pass_their_schemas():
    assert bench.recorded_results("all") and bench.recorded_alg_search()
    assert recorded_reports()
    assert published.published_records() and _fitfile.load_fit()


def test_shipped_decode_results_pass_their_schema():
    from twofour.serve import recorded_decode_results  # twofour-decode/1, none until a GPU run is recorded

    assert all(r.provenance["device"] == "cuda" for r in recorded_decode_results())


def test_kernel_table_names_the_case_and_row(tmp_path):
    src = next(DATA.glob("kernels-*.json"))

    def edit(d):
        d["cases"][1]["rows"][0]["class"] = "sparse-magic"

    _copy_edited(src, tmp_path / src.name, edit)
    with pytest.raises(ValueError, match=r"kernel table file .*: cases/1/rows/0/class: 'sparse-magic' is not one of"):
        recorded_reports(tmp_path)


def test_kernel_table_of_another_schema_is_refused(tmp_path):
    src = next(DATA.glob("kernels-*.json"))
    _copy_edited(src, tmp_path / src.name, lambda d: d.update(schema="twofour-kernels/0"))
    with pytest.raises(ValueError, match=r"schema: 'twofour-kernels/1' was expected"):
        recorded_reports(tmp_path)


def test_alg_sweep_lists_every_missing_field(tmp_path):
    src = next(DATA.glob("cslt-algsearch-*.json"))

    def edit(d):
        del d["cases"][0]["best"], d["cases"][0]["dense_ms"]

    _copy_edited(src, tmp_path / src.name, edit)
    with pytest.raises(ValueError, match=r"algorithm sweep file .*: cases/0 lacks fields \['best', 'dense_ms'\]"):
        bench.recorded_alg_search(tmp_path)


def test_results_file_with_a_negative_time_is_refused(tmp_path):
    src = next(DATA.glob("bench-*.json"))
    _copy_edited(src, tmp_path / src.name, lambda d: d["points"][2]["dense"].update(median_ms=-1.0))
    with pytest.raises(ValueError, match=r"results file .*: points/2/dense"):
        bench.load_results(tmp_path / src.name)


def test_fit_file_without_base_params(tmp_path):
    _copy_edited(FIT_PATH, tmp_path / "fit.json", lambda d: d["base"].pop("params"))
    with pytest.raises(ValueError, match=r"kernel fit file .*: base lacks fields \['params'\]"):
        _fitfile.load_fit(tmp_path / "fit.json")


def test_published_record_with_a_text_speedup(tmp_path):
    path = _copy_edited(published.PUBLISHED_PATH, tmp_path / "pub.json", lambda d: d[5].update(speedup="1.5x"))
    with pytest.raises(ValueError, match=r"published measurements file .*: 5/speedup: '1.5x' is not of type 'number'"):
        published.published_records(str(path))

