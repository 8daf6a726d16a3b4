"""The GPU spec table: every number cited, sparse = 2x dense, lookups and labels."""

import pytest

from twofour.vocabulary import DTYPE_KEYS as DTYPES
from twofour.hardware import GPUS, STATUSES, Citation, get_gpu, match_device_name, spec_rows, unconfirmed_fields

REQUIRED = ["T4", "A10G", "L4", "A100", "H100", "H200", "B200"]


def test_required_gpus_present():
    assert set(REQUIRED) <= set(GPUS)


@pytest.mark.parametrize("name", REQUIRED)
def test_every_number_has_a_citation(name):
    g = GPUS[name]
    for key in ("capability", "sms", "mem_bw_gbs"):
        assert g.cite[key].source and g.cite[key].status in STATUSES
    for kind, table in (("dense", g.dense_tflops), ("sparse", g.sparse_tflops)):
        assert set(table) == set(DTYPES)
        for d, v in table.items():
            if v is not None:
                assert v > 0
                assert g.cite[f"{kind}.{d}"].source, f"{name} {kind}.{d} uncited"


@pytest.mark.parametrize("name", REQUIRED)
def test_sparse_peak_is_twice_dense_where_both_exist(name):
    g = GPUS[name]
    for d in DTYPES:
        s, dn = g.sparse_tflops[d], g.dense_tflops[d]
        if s is not None:
            assert dn is not None and s == pytest.approx(2 * dn)
    # no tensor-core sparse mode for CUDA-core fp32
    assert g.sparse_tflops["fp32"] is None


def test_sparse_support_follows_compute_capability():
    assert not GPUS["T4"].sparse_24 and GPUS["T4"].backends == ()
    assert GPUS["A100"].backends == ("cuSPARSELt", "CUTLASS")
    assert GPUS["H200"].backends == ("cuSPARSELt",)
    assert all(GPUS[n].sparse_24 for n in REQUIRED if n != "T4")
    assert all(not any(GPUS["T4"].sparse_tflops.values()) for _ in [0])


def test_datasheet_values_spot_check():
    # H100 SXM data sheet: 1,979 TFLOPS fp16 with sparsity, 3.35 TB/s, 132 SMs
    h = get_gpu("H100 SXM")
    assert (h.peak_tflops("fp16", sparse=True), h.peak_tflops("fp16"), h.mem_bw_gbs, h.sms) == (1979.0, 989.5, 3350.0, 132)
    assert get_gpu("A100").peak_tflops("bf16") == 312.0
    assert get_gpu("h200").mem_bw_gbs == 4800.0


def test_peak_errors_name_the_problem():
    with pytest.raises(ValueError, match="A100 has no dense tensor-core peak for dtype 'fp8'"):
        get_gpu("A100").peak_tflops("fp8")
    with pytest.raises(ValueError, match="T4 has no 2:4 sparse"):
        get_gpu("T4").peak_tflops("fp16", sparse=True)
    with pytest.raises(ValueError, match="dtype must be one of"):
        get_gpu("A100").peak_tflops("float64")
    with pytest.raises(ValueError, match="gpu must be one of"):
        get_gpu("V100")
    with pytest.raises(ValueError, match="status must be one of"):
        Citation("x", "probably")


def test_match_device_name():
    assert match_device_name("NVIDIA H200").name == "H200"
    assert match_device_name("NVIDIA A100-SXM4-80GB").name == "A100"
    assert match_device_name("NVIDIA A10G").name == "A10G"
    assert match_device_name("Tesla T4").name == "T4"
    assert match_device_name("NVIDIA GeForce RTX 4090") is None
    assert match_device_name(None) is None


def test_unconfirmed_values_are_labelled_in_rows():
    unconf = set(unconfirmed_fields())
    assert ("A10G", "dense.fp16") in unconf and ("B200", "sms") in unconf
    rows = {r["gpu"]: r for r in spec_rows()}
    assert rows["A10G"]["fp16 dense_label"].endswith("(unconfirmed)")
    assert rows["A100"]["fp16 dense_label"] == "312"
    assert rows["B200"]["sms_label"] == "148 (unconfirmed)"
    assert rows["A100"]["fp8 dense_label"] == "—"
