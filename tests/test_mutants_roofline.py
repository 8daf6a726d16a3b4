"""twofour.roofline against bytes and FLOPs counted by hand (issue 21, mutation testing).

The dtype facts used here, stated once: fp16/bf16 store 2 bytes and write 2; int8/fp8 store 1
byte and write 2 (8-bit GEMMs are assumed to write bf16); 2:4 keeps half the values plus a
2-bit position per kept value.
"""

from __future__ import annotations

import pytest

from twofour.roofline import Efficiency, arithmetic_intensity, ceilings, predict, ridge_point, wave_efficiency

MI = 1 << 20


def _approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("dtype, in_b, out_b", [("fp16", 2, 2), ("bf16", 2, 2), ("int8", 1, 2), ("fp8", 1, 2)])
def test_intensity_counts_weight_input_and_output_bytes(dtype, in_b, out_b):
    # 4096^3: 2^37 FLOPs; weight, x and y are 16 Mi elements each.
    dense_bytes = 16 * MI * in_b + 16 * MI * in_b + 16 * MI * out_b
    assert arithmetic_intensity(4096, 4096, 4096, dtype) == _approx(2**37 / dense_bytes)
    packed_weight = 16 * MI * in_b * (2 * in_b + 0.5) / (4 * in_b)
    sparse_bytes = packed_weight + 16 * MI * in_b + 16 * MI * out_b
    assert arithmetic_intensity(4096, 4096, 4096, dtype, sparse=True) == _approx(2**37 / sparse_bytes)


def test_int8_intensity_by_hand():
    # 16 Mi (weight) + 16 Mi (x) bytes in, 32 Mi bytes of bf16 out: 64 Mi bytes for 2^37 FLOPs.
    assert arithmetic_intensity(4096, 4096, 4096, "int8") == 2048.0
    # Decode: 2 * 4096^2 FLOPs over 16 Mi + 4 Ki + 8 Ki bytes, just under 2 FLOPs per byte.
    assert arithmetic_intensity(1, 4096, 4096, "int8") == _approx(2 * 4096**2 / (16 * MI + 4096 + 8192))


PERFECT = Efficiency(dense_compute=1.0, sparse_compute=1.0, dense_memory=1.0, sparse_memory=1.0,
                     dense_overhead_us=0.0, sparse_overhead_us=0.0)


def test_predicted_int8_decode_moves_the_bytes_counted_by_hand():
    # H100: 3,350 GB/s. A 1-token int8 GEMV is memory-bound on both sides.
    p = predict(1, 4096, 4096, "int8", "H100", params=PERFECT, scenario="ideal")
    assert (p.bound_dense, p.bound_sparse) == ("memory", "memory")
    # Dense: weight 16 Mi bytes, x 4 Ki bytes, y 4 Ki bf16 values = 8 Ki bytes.
    assert p.dense_us == _approx((16 * MI + 4096 + 8192) / 3350e9 * 1e6)
    # 2:4: x is padded to 16 rows for int8; the packed weight is 10 Mi bytes (0.625 of dense).
    assert p.M_padded == 16
    assert p.sparse_us == _approx((10 * MI + 16 * 4096 + 16 * 4096 * 2) / 3350e9 * 1e6)


def test_predicted_fp16_prefill_is_compute_bound_at_the_peaks():
    # 16384 x 4096 x 4096 on H100: 989.5 TFLOP/s dense, 1979 sparse; 4096 tiles of 128 x 128
    # fill 132 SMs in 32 waves (4096 / 4224 of the slots).
    p = predict(16384, 4096, 4096, "fp16", "H100", params=PERFECT, scenario="ideal")
    wave = 4096 / (32 * 132)
    assert wave_efficiency(16384, 4096, 132) == _approx(wave)
    assert p.bound_dense == p.bound_sparse == "compute"
    assert p.dense_us == _approx(2 * 16384 * 4096 * 4096 / (989.5e12 * wave) * 1e6)
    assert p.sparse_us == _approx(2 * 16384 * 4096 * 4096 / (1979e12 * wave) * 1e6)


def test_ceilings_and_ridge_point():
    assert ceilings("fp16") == {"compute": 2.0, "memory": 1 / 0.5625}
    assert ceilings("fp8")["memory"] == _approx(1 / 0.625)
    assert ceilings("int8")["memory"] == _approx(1.6)
    assert ridge_point("H100", "fp16") == _approx(989.5e12 / 3350e9)
    assert ridge_point("H100", "fp16", sparse=True) == _approx(1979e12 / 3350e9)


def test_fit_summary_names_the_gpu_and_each_regime():
    import re

    from twofour.roofline import fit_summary

    text = fit_summary("H100")
    assert "; H100: " in text
    assert re.search(r"each shape left out: M<=16 \d+% \(n=\d+\), 16<M<=256 \d+% \(n=\d+\), M>256 \d+% \(n=\d+\);", text)
    assert "; this GPU: no usable measurement on this GPU" in fit_summary()


class _Results(list):
    """Points without a 'gpu' key and a provenance naming the GPU, like twofour.bench.Results."""

    provenance = {"gpu_name": "NVIDIA H100 80GB HBM3"}


def test_fit_takes_the_gpu_from_the_provenance():
    from twofour.roofline import fit

    truth = Efficiency(dense_compute=0.8, sparse_compute=0.5, dense_memory=0.7, sparse_memory=0.6,
                       dense_overhead_us=4.0, sparse_overhead_us=20.0)
    pts = _Results()
    for M in (1, 16, 256, 4096, 16384):
        p = predict(M, 4096, 4096, "fp16", "H100", params=truth)
        pts.append(dict(M=M, N=4096, K=4096, dtype="fp16", dense_ms=p.dense_us / 1e3, sparse_ms=p.sparse_us / 1e3))
    rep = fit(pts, base=Efficiency())
    assert rep.params.dense_memory == pytest.approx(0.7, rel=0.02)
    assert rep.dense_rms_rel_err < 0.01
    with pytest.raises(ValueError, match="needs a 'gpu'"):
        fit(list(pts), base=Efficiency())


def test_per_call_costs_by_scenario_and_backend():
    e = Efficiency(dense_overhead_us=5, sparse_overhead_us=15, dense_host_us=20, sparse_host_us=500)
    assert [e.device_us("sparse", s) for s in ("ideal", "cached", "eager")] == [0.0, 15, 15]
    assert [e.host_us("sparse", s) for s in ("ideal", "cached", "eager")] == [0.0, 0.0, 500]
    assert e.host_us("dense", "eager") == 20
    # CUTLASS builds no cuSPARSELt plan: its host cost is the dense one's, in any spelling.
    assert e.host_us("sparse", "eager", "CUTLASS") == 20
    assert e.host_us("sparse", "eager", "cuSPARSELt") == 500
    for call in (e.device_us, e.host_us):
        with pytest.raises(ValueError, match="scenario"):
            call("sparse", "fast")


def test_gemm_time_without_a_host_cost_is_the_kernel_time():
    from twofour.roofline import gemm_time_s

    # 64 x 64 fp16 weight, one token: 8,192 + 128 + 128 bytes at 1,000 GB/s = 8.448 ns.
    t, bound, _ = gemm_time_s(1, 64, 64, peak_tflops=1000.0, mem_bw_gbs=1000.0, sms=100, weight_bytes=8192,
                              in_bytes=2, out_bytes=2, compute_eff=1.0, memory_eff=1.0, overhead_us=0.0,
                              tile_m=128, tile_n=128)
    assert bound == "memory"
    assert t == _approx(8448 / 1e12)


def test_intensity_defaults_to_fp16():
    assert arithmetic_intensity(1, 4096, 4096) == arithmetic_intensity(1, 4096, 4096, "fp16")
    assert arithmetic_intensity(1, 4096, 4096) != arithmetic_intensity(1, 4096, 4096, "int8")


def test_ceiling_order_says_what_it_moved_and_fills_missing_costs():
    from twofour.roofline import ceiling_order

    values, moved = ceiling_order({"dense_compute": 0.8, "sparse_compute": 0.9, "dense_memory": 0.7,
                                   "sparse_memory": 0.5, "dense_overhead_us": 5, "dense_host_us": 20})
    assert values["sparse_compute"] == 0.8 and values["sparse_memory"] == 0.5
    assert values["sparse_overhead_us"] == 5 and values["sparse_host_us"] == 20
    assert moved == ["sparse_compute 0.9 > dense_compute 0.8: set to 0.8",
                     "sparse_overhead_us 0 < dense_overhead_us 5: set to 5",
                     "sparse_host_us 0 < dense_host_us 20: set to 20"]


def test_predict_defaults_to_the_backends_own_fit():
    # A100 has a set fitted to its CUTLASS points and one to all its points; a compute-bound
    # GEMM's 2:4 time depends on which one predict() picks when no params are passed.
    from twofour.roofline import default_params

    cutlass, gpu_wide = default_params("A100", "CUTLASS"), default_params("A100")
    assert cutlass.sparse_compute != gpu_wide.sparse_compute
    shape = (8192, 4096, 4096, "fp16", "A100", "cutlass")
    assert predict(*shape).sparse_us == predict(*shape, params=cutlass).sparse_us
    assert predict(*shape).sparse_us != predict(*shape, params=gpu_wide).sparse_us


def test_fit_summary_marks_only_a_backends_own_set():
    from twofour.roofline import fit_summary

    # A100 has a CUTLASS set: the line names GPU/backend (as passed) and that set's note.
    assert "; A100/cutlass: base set with sparse_compute refitted to 1 published CUTLASS point(s)" in fit_summary("A100", "cutlass")
    # H100 has no set per backend: the GPU's own set, labelled by the GPU alone.
    text = fit_summary("H100", "cusparselt")
    assert "; H100: base set with sparse_compute refitted to" in text and "H100/" not in text


def test_crossover_m_reports_a_bad_backend_before_a_bad_scenario_like_predict():
    from twofour.roofline import crossover_m

    message = r"^backend 'bogus' is not available on H100; valid: \['cuSPARSELt'\]$"
    with pytest.raises(ValueError, match=message):
        predict(1, 4096, 4096, "fp16", "H100", "bogus", scenario="bogus")
    with pytest.raises(ValueError, match=message):
        crossover_m(4096, 4096, "fp16", "H100", "bogus", scenario="bogus")


@pytest.mark.parametrize("pad_to", [0, -8, 2.5, True])
def test_efficiency_pad_to_error_names_it(pad_to):
    with pytest.raises(ValueError, match=rf"^pad_to must be a positive int, got {pad_to!r}$"):
        Efficiency(pad_to=pad_to)


def test_fit_counts_the_activation_bytes_of_a_memory_bound_gemm():
    # N = 64: the activation x (M x K, 2 bytes each in fp16) outweighs the weight (64 x K) from
    # M = 64 on, and every point is memory-bound (about 62 FLOP/byte against an H100 ridge of 295;
    # from M = 4096 on, since 128-row tiles of a smaller M leave most of the 132 SMs idle).
    # Times made by predict with known efficiencies must fit back to them; counting x at
    # K / 2 bytes per row instead of 2K would put the memory efficiency near 0.7 / 4.
    from twofour.roofline import fit

    truth = Efficiency(dense_compute=0.8, sparse_compute=0.5, dense_memory=0.7, sparse_memory=0.6,
                       dense_overhead_us=4.0, sparse_overhead_us=20.0)
    pts = []
    for M in (4096, 16384, 65536, 262144):
        p = predict(M, 64, 4096, "fp16", "H100", params=truth)
        assert (p.bound_dense, p.bound_sparse) == ("memory", "memory")
        pts.append(dict(M=M, N=64, K=4096, dtype="fp16", gpu="H100", dense_ms=p.dense_us / 1e3, sparse_ms=p.sparse_us / 1e3))
    rep = fit(pts, base=Efficiency())
    assert rep.params.dense_memory == pytest.approx(0.7, rel=0.02)
    assert rep.params.sparse_memory == pytest.approx(0.6, rel=0.02)
    assert rep.dense_rms_rel_err < 0.01 and rep.sparse_rms_rel_err < 0.01
