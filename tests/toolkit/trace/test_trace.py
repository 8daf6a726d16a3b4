"""`twofour trace` and `twofour.dispatch.trace`: real CPU traces recorded here, the real H200 traces
shipped with the package, GPU-format traces generated from documented kernel names (host-gap,
no-sparse-kernel, Amdahl, unclassified cases), malformed files, and a 64 MB trace (time and
peak RSS printed)."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import torch

from twofour.cli import main
from twofour.dispatch.trace import _jsonstream
from twofour.dispatch.kernels import records_from_profiler, summarize
from twofour.dispatch.trace import (
    ATTENTION,
    TRACE_CLASSES,
    TraceError,
    analyze,
    load,
    report_text,
    recorded,
    trace_class,
)

# ---------------------------------------------------------------------------------------------
# A writer of GPU-format traces, event for event in the layout torch.profiler's
# export_chrome_trace uses (kineto: "ph": "X", categories cpu_op / cuda_runtime / kernel /
# user_annotation, "External id" and "correlation" in args, pretty-printed). Kernel names are
# the documented ones: cuSPARSELt's xmma_sparse_gemm (as recorded on the H200), cuBLAS's nvjet
# Hopper GEMM, PyTorch's flash-attention and elementwise kernels.

SPARSE_K = ("sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_warpgroupsize2x1x1_"
            "execute_segment_k_off_kernel_5x_cusparselt")
DENSE_K = "nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_TNT"
ATTN_K = ("void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
          "cutlass::half_t>, false, true, false>(Flash_fwd_params)")
ELEM_K = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::Half>, "
          "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3>)")
UNKNOWN_K = "my_custom_kernel_v2"


class _Writer:
    """Simulates a CPU thread launching onto one GPU stream and writes the events as it goes."""

    def __init__(self, f, device="NVIDIA H100 80GB HBM3"):
        self.f, self.first, self.ext, self.corr = f, True, 1000, 5000
        self.t = self.gpu_free = 1_000_000.0
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "%s", '
                '"computeMajor": 9, "computeMinor": 0}\n  ],\n  "traceEvents": [\n' % device)

    def ev(self, cat, name, pid, tid, ts, dur, **args):
        if not self.first:
            self.f.write(",\n")
        self.first = False
        a = ", ".join(f'"{k.replace("_", " ")}": {v}' for k, v in args.items())
        self.f.write('  {\n    "ph": "X", "cat": "%s", "name": %s, "pid": %d, "tid": %d,\n    "ts": %.3f, "dur": %.3f,\n'
                     '    "args": {\n      %s\n    }\n  }' % (cat, json.dumps(name), pid, tid, ts, dur, a))

    def new_ext(self):
        self.ext += 1
        return self.ext

    def launch(self, kernel, kernel_us, op_ext):
        """cudaLaunchKernel now; the kernel starts when the stream is free (6 us launch latency)."""
        self.corr += 1
        self.ev("cuda_runtime", "cudaLaunchKernel", 10, 10, self.t, 4.0, External_id=op_ext, correlation=self.corr)
        start = max(self.t + 6.0, self.gpu_free)
        self.ev("kernel", kernel, 0, 7, start, kernel_us, External_id=op_ext, correlation=self.corr, stream=7, device=0)
        self.gpu_free = start + kernel_us
        self.t += 4.0

    def op(self, names, kernel, kernel_us, cpu_us=8.0, setup_us=0.0):
        """Nested operators (outer first); the innermost spends cpu_us + setup_us, then launches."""
        exts = [self.new_ext() for _ in names]
        t0 = self.t
        self.t += cpu_us + setup_us
        self.launch(kernel, kernel_us, exts[-1])
        self.t += 1.0
        for depth, (name, ext) in reversed(list(enumerate(zip(names, exts)))):
            self.ev("cpu_op", name, 10, 10, t0 + depth, self.t - t0 - 2 * depth + 2 * len(names), External_id=ext)
        self.t += 2 * len(names) + 1.0

    def step(self, name, *, layers, sparse, gemm_us, setup_us=0.0, attn_us=10.0, elem_us=3.0, unknown_us=0.0):
        t0 = self.t
        ext = self.new_ext()
        self.t += 2.0
        for _ in range(layers):
            self.op(["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention"], ATTN_K, attn_us)
            if sparse:
                self.op(["aten::linear", "aten::mm", "aten::_cslt_sparse_mm"], SPARSE_K, gemm_us, setup_us=setup_us)
            else:
                self.op(["aten::linear", "aten::mm"], DENSE_K, gemm_us)
            self.op(["aten::add"], ELEM_K, elem_us, cpu_us=4.0)
            if unknown_us:
                self.op(["mylib::custom_op"], UNKNOWN_K, unknown_us, cpu_us=2.0)
        self.corr += 1
        sync0 = self.t
        self.t = max(self.t, self.gpu_free) + 5.0
        self.ev("cuda_runtime", "cudaDeviceSynchronize", 10, 10, sync0, self.t - sync0, correlation=self.corr)
        self.ev("user_annotation", name, 10, 10, t0, self.t - t0 + 1, External_id=ext)
        self.t += 20.0

    def close(self):
        self.f.write('\n  ],\n  "traceName": "generated by tests/toolkit/trace/test_trace.py"\n}\n')


def gpu_trace(path, *, steps=4, layers=4, sparse=False, gemm_us=20.0, setup_us=0.0, unknown_us=0.0,
              prefill=False, step_name="decode_step_{}", compress=False):
    opener = gzip.open if compress else open
    with opener(path, "wt") as f:
        w = _Writer(f)
        if prefill:
            w.step("prefill", layers=layers, sparse=sparse, gemm_us=gemm_us * 20, setup_us=setup_us, attn_us=200.0)
        for i in range(steps):
            w.step(step_name.format(i), layers=layers, sparse=sparse, gemm_us=gemm_us, setup_us=setup_us,
                   unknown_us=unknown_us)
        w.close()
    return path


# ---------------------------------------------------------------------------------------------
# Real CPU traces, recorded here with torch.profiler on the chapter's small model


@pytest.fixture(scope="module")
def cpu_traces(tmp_path_factory):
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    from twofour.quality.model import ModelConfig, TinyLM

    out = tmp_path_factory.mktemp("cpu-traces")
    torch.manual_seed(0)
    model = TinyLM(ModelConfig(d_model=64, n_layers=2, n_heads=4, seq_len=32)).eval()
    tokens = torch.randint(0, 256, (2, 32))
    with torch.no_grad():
        model(tokens)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            with record_function("prefill"):
                model(tokens)
            for i in range(3):
                with record_function(f"decode_step_{i}"):
                    model(tokens[:, -4:])
        phases = out / "tinylm-phases.json"
        prof.export_chrome_trace(str(phases))
        records = records_from_profiler(prof)

        steps = out / "tinylm-steps.json.gz"
        raw = out / "tinylm-steps.json"
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle.*")
            with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3),
                         on_trace_ready=lambda p: p.export_chrome_trace(str(raw))) as prof2:
                for _ in range(4):
                    model(tokens)
                    prof2.step()
        with open(raw, "rb") as src, gzip.open(steps, "wb") as dst:
            dst.write(src.read())
    return {"phases": phases, "steps": steps, "records": records}


def test_cpu_trace_phases_classes_and_p(cpu_traces):
    r = analyze(cpu_traces["phases"])
    assert [p.phase for p in r.phases] == ["prefill", "decode"]
    pre, dec = r.phase("prefill"), r.phase("decode")
    assert pre.device == dec.device == "cpu" and not r.trace.has_gpu
    # 2 blocks x 6 linears + the LM head = 13 GEMMs per forward; none can be 2:4 on a CPU
    assert (pre.gemms, dec.gemms, dec.sparse_gemms) == (13, 39, 0)
    assert [s.name for s in dec.steps] == ["decode_step_0", "decode_step_1", "decode_step_2"]
    assert dec.summarized == [1, 2]
    assert dec.time_us["dense-gemm"] > 0 and dec.time_us[ATTENTION] > 0  # SDPA's CPU kernel
    assert 0 < pre.p < 1 and 0 < dec.p < 1
    assert dec.verdicts()[0] == "2:4 kernels ran: 0 of 39 GEMMs (a CPU trace: sparse tensor cores exist only on NVIDIA GPUs)"
    text = report_text(r)
    assert "CPU trace (no GPU activity recorded)" in text and "funnel (decode)" in text


def test_cpu_trace_gemm_time_matches_the_profilers_own_events(cpu_traces):
    """The file says what the live profiler said: dense-GEMM self time summed over every step."""
    live = summarize(cpu_traces["records"]).time_us["dense-gemm"]
    r = analyze(cpu_traces["phases"])
    from_file = sum(st.time_us.get("dense-gemm", 0.0) for ph in r.phases for st in ph.steps)
    assert from_file == pytest.approx(live, rel=0.02)


def test_cpu_trace_profiler_steps_and_phase_errors(cpu_traces, capsys):
    r = analyze(cpu_traces["steps"])  # gzipped, ProfilerStep#N annotations
    ph = r.phase("step")
    assert [s.name for s in ph.steps] == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    assert ph.gemms == 39
    text = report_text(r)
    # no 2:4 kernel runs on a CPU: no funnel and no end-to-end promise from GPU ceilings
    assert ph.funnel() == [] and "none: a CPU trace" in text
    assert "end to end" not in text and "2x faster GEMMs" not in text and "predicted" not in text
    with pytest.raises(TraceError, match=r"--phase decode: no step annotation .* has 'decode'"):
        analyze(cpu_traces["steps"], phase="decode")
    assert analyze(cpu_traces["phases"], phase="decode").phases[0].phase == "decode"
    assert main(["trace", str(cpu_traces["phases"]), "--phase", "prefill"]) == 0
    out = capsys.readouterr().out
    assert "prefill: 1 step" in out and "decode:" not in out


# ---------------------------------------------------------------------------------------------
# The H200 traces shipped with the package (recorded with scripts/gpu_measure.py traces)


@pytest.fixture(scope="module")
def h200():
    return {name: load(recorded(name)) for name in ("dense-eager", "sparse-eager", "dense-graph", "sparse-graph")}


def test_h200_traces_load(h200):
    t = h200["sparse-eager"]
    assert t.device_name == "NVIDIA H200" and t.has_gpu
    assert (t.count("kernel"), t.count("gpu_memset"), t.count("cpu_op")) == (42, 30, 714)
    assert h200["dense-eager"].count("kernel") == 72  # 42 GEMMs + 30 split-K reductions
    assert "GPU trace on NVIDIA H200" in repr(t)


def test_h200_sparse_eager_is_host_bound_by_cusparselt_setup(h200):
    r = analyze(h200["sparse-eager"], baseline=h200["dense-eager"])
    ph = r.phase("decode")
    assert (ph.gemms, ph.sparse_gemms, ph.sparse_backends) == (42, 42, ("cuSPARSELt",))
    assert len(ph.steps) == 3 and ph.summarized == [1, 2]
    assert ph.idle_fraction > 0.9
    assert ph.culprit == "aten::_cslt_sparse_mm" and ph.culprit_share > 0.9
    assert ph.setup_us["aten::_cslt_sparse_mm"] == pytest.approx(ph.culprits["aten::_cslt_sparse_mm"])
    # the recorded gaps are ~0.8 ms each: cuSPARSELt's plan built on every call
    assert all(600 < g.dur_us < 1200 and g.setup for g in ph.largest_gaps)
    cmp = ph.comparison
    assert 0.4 < cmp.gemm_speedup < 0.7  # M = 16 decode: the 2:4 kernels lose on this H200
    assert cmp.end_to_end < 0.1
    v = ph.verdicts()
    assert v[0] == "2:4 kernels ran: 42 of 42 GEMMs (cuSPARSELt)"
    assert v[1].startswith(f"GPU idle {ph.idle_fraction:.0%} of the step, mostly during `aten::_cslt_sparse_mm` set-up")
    assert "cache plans or capture a CUDA graph" in v[1]
    assert any(s.startswith("sparse GEMMs are slower than dense (0.5") for s in v)
    assert v[-1].startswith("where the 2x went: the biggest loss is eligible fraction") and "host time" in v[-1]
    stages = ph.funnel()
    assert [s.how for s in stages] == ["data sheet", "predicted", "measured", "measured", "measured"]
    assert stages[1].speedup == pytest.approx(1 / 0.5625)
    assert stages[4].speedup == pytest.approx(cmp.end_to_end)


def test_h200_graph_replay_removes_the_gaps_not_the_kernel_loss(h200):
    eager = analyze(h200["sparse-eager"], baseline=h200["dense-eager"]).phase("decode")
    graph = analyze(h200["sparse-graph"], baseline=h200["dense-graph"]).phase("decode")
    assert graph.idle_fraction < 0.1
    assert any(v.startswith("GPU busy") and "not host-bound" in v for v in graph.verdicts())
    # the same kernels in both: the GEMM speedup agrees, the end to end does not
    assert graph.comparison.gemm_speedup == pytest.approx(eager.comparison.gemm_speedup, rel=0.05)
    assert 0.4 < graph.comparison.end_to_end < 0.7
    assert graph.comparison.end_to_end > 5 * eager.comparison.end_to_end
    assert graph.p > 0.85  # replayed: the step is almost all GEMM


def test_h200_dense_alone_says_no_2_4_kernel_ran(h200):
    ph = analyze(h200["dense-eager"]).phase("decode")
    assert (ph.gemms, ph.sparse_gemms) == (42, 0)
    assert ph.verdicts()[0].startswith("2:4 kernels ran: 0 of 42 GEMMs: if this was meant to be the 2:4 run")
    assert ph.time_us == pytest.approx({"dense-gemm": ph.gemm_us})  # split-K reductions are GEMM time
    # the shipped traces carry no operand shapes: the 2:4 GEMM step is unknown, never assumed at the ceiling
    assert [s.how for s in ph.funnel()] == ["data sheet", "predicted", "unknown", "unknown", "unknown"]
    assert "record_shapes=True" in ph.funnel()[2].explains


def test_gzip_and_plain_read_the_same(h200, tmp_path):
    plain = tmp_path / "sparse-eager.json"
    plain.write_bytes(gzip.decompress(recorded("sparse-eager").read_bytes()))
    a, b = h200["sparse-eager"], load(plain)
    assert a.names == b.names and (a.ts == b.ts).all() and (a.ext == b.ext).all() and (a.corr == b.corr).all()


def test_chunk_boundaries_anywhere(monkeypatch, h200):
    """Tiny chunks cut numbers, strings and keys everywhere; the result must not change."""
    ref = h200["dense-graph"]
    for chunk in (1, 7, 64):
        monkeypatch.setattr(_jsonstream, "_CHUNK", chunk)
        t = load(recorded("dense-graph"))
        assert t.names == ref.names and (t.ts == ref.ts).all() and (t.dur == ref.dur).all(), chunk
        assert t.meta["deviceProperties"][0]["name"] == "NVIDIA H200"


# ---------------------------------------------------------------------------------------------
# Generated GPU-format traces


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu-format")
    return {
        "dense": gpu_trace(d / "dense.json", gemm_us=21.0),
        "host-gap": gpu_trace(d / "host-gap.json", sparse=True, gemm_us=20.0, setup_us=450.0),
        "cached": gpu_trace(d / "cached.json.gz", sparse=True, gemm_us=20.0, compress=True),
        "unknown": gpu_trace(d / "unknown.json", sparse=True, gemm_us=20.0, unknown_us=5.0),
        "phases": gpu_trace(d / "phases.json", sparse=True, gemm_us=20.0, prefill=True),
        "no-steps": gpu_trace(d / "no-steps.json", steps=1, step_name="forward"),
    }


def test_generated_host_gap_case(generated):
    ph = analyze(generated["host-gap"], baseline=generated["dense"]).phase("decode")
    assert ph.idle_fraction > 0.8 and ph.culprit == "aten::_cslt_sparse_mm"
    assert ph.largest_gaps[0].during[-3:] == ("aten::linear", "aten::mm", "aten::_cslt_sparse_mm")
    assert ph.largest_gaps[0].setup and ph.largest_gaps[0].next_kernel == SPARSE_K
    v = ph.verdicts()
    assert v[1].startswith(f"GPU idle {ph.idle_fraction:.0%} of the step, mostly during `aten::_cslt_sparse_mm` set-up")
    assert "host-bound: each call sets up and tears down its cuSPARSELt descriptors and plan" in v[1]
    assert any(s.startswith("end to end 0.") and "the rest is host time" in s for s in v)


def test_generated_no_sparse_kernel_case(generated):
    ph = analyze(generated["dense"]).phase("decode")
    assert (ph.gemms, ph.sparse_gemms) == (16, 0)
    assert ph.verdicts()[0].startswith("2:4 kernels ran: 0 of 16 GEMMs")
    # the same file as 2:4 run against itself: refused, saying so (it measured "1.00x" before)
    with pytest.raises(TraceError, match="--compare got the same trace as FILE"):
        analyze(generated["dense"], baseline=generated["dense"])


def test_generated_amdahl_case(generated):
    """Cached plans: no host gaps from set-up; 1.05x faster GEMMs, diluted by the rest of the step."""
    r = analyze(generated["cached"], baseline=generated["dense"])
    ph = r.phase("decode")
    cmp = ph.comparison
    assert cmp.gemm_speedup == pytest.approx(21 / 20, rel=1e-6)
    dense = analyze(generated["dense"]).phase("decode")
    assert cmp.dense_p == pytest.approx(dense.p) and 0.3 < cmp.dense_p < 0.6
    v = ph.verdicts()
    expected = f"sparse GEMMs 1.05x faster but only {cmp.dense_p:.0%} of step time is GEMM: Amdahl caps the step at"
    assert any(s.startswith(expected) for s in v), v
    stages = ph.funnel()
    assert stages[3].speedup == pytest.approx(1 / ((1 - cmp.dense_p) + cmp.dense_p / cmp.gemm_speedup))
    assert f"Amdahl from measured p = {cmp.dense_p:.2f} (the dense baseline)" in report_text(r)


def test_generated_unclassified_and_attention(generated):
    ph = analyze(generated["unknown"]).phase("decode")
    assert ph.unclassified == {UNKNOWN_K: pytest.approx(3 * 4 * 5.0)}  # 3 summarized steps x 4 layers x 5 us
    assert ph.time_us["unclassified"] == pytest.approx(4 * 5.0)
    assert ph.time_us[ATTENTION] == pytest.approx(4 * 10.0)
    assert ph.gemm_us == pytest.approx(4 * 20.0)  # unclassified time is never counted as eligible
    assert any("1 kernel name unclassified" in s for s in ph.verdicts())
    assert UNKNOWN_K in str(analyze(generated["unknown"]))


def test_trace_class_rules():
    assert trace_class("fmha_cutlassF_f16_aligned_64x128_rf_sm80", "dense-gemm") == ATTENTION
    assert trace_class("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", "other") == ATTENTION
    assert trace_class(SPARSE_K, "sparse-cusparselt", in_attention=True) == "sparse-cusparselt"
    assert trace_class("nvjet_sm90_hsh_64x16", "dense-gemm", in_attention=True) == ATTENTION  # bmm inside SDPA
    assert trace_class("triton_poi_fused_add_0", "other") == "other"
    assert trace_class("aten::foo", "other", device="cpu") == "other"
    assert trace_class("mylib::foo", "other", device="cpu") == "unclassified"
    assert set(TRACE_CLASSES) >= {"sparse-cusparselt", "sparse-cutlass", "dense-gemm", ATTENTION, "other", "unclassified"}


def test_generated_phases_and_whole_trace(generated):
    r = analyze(generated["phases"])
    assert [p.phase for p in r.phases] == ["prefill", "decode"]
    assert r.phase("prefill").ceiling == 2.0 and r.phase("decode").ceiling == pytest.approx(1 / 0.5625)
    assert [p.phase for p in analyze(generated["phases"], phase="prefill").phases] == ["prefill"]
    r = analyze(generated["no-steps"])
    assert r.phases[0].phase == "trace" and r.phases[0].steps[0].name == "whole trace"


def test_html_report_is_self_contained(generated, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["trace", str(generated["host-gap"]), "--compare", str(generated["dense"]), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "mostly during" in page
    stripped = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in stripped and "https://" not in stripped and "<script" not in page
    assert "funnel (decode)" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# Malformed files: one clear line, exit code 2


def _cli_error(path, capsys, *extra):
    code = main(["trace", str(path), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("twofour trace: error: ") and "Traceback" not in err
    return err


def test_malformed_files(tmp_path, capsys, generated):
    cases = {
        "empty.json": (b"", "the file is empty (0 bytes)"),
        "blank.json": (b"  \n\n ", "the file is empty: no JSON in it"),
        "text.json": (b"step,ms\n1,2\n", "not a JSON trace: it starts with 'step,ms"),
        "binary.json": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not UTF-8"),
        "config.json": (b'{"model": "llama", "layers": 32}', 'JSON, but not a profiler trace: no "traceEvents" array (top-level keys: model, layers)'),
        "numbers.json": (b"[1, 2, 3]", "event 0 of traceEvents is not an object"),
        "events-not-list.json": (b'{"traceEvents": 5}', '"traceEvents" is not an array'),
        "no-events.json": (b'{"traceEvents": []}', "holds no CPU operators or GPU kernels (0 events read)"),
        "garbage-after.json": (b'{"traceEvents": []} x', "unexpected 'x' after the end of the trace"),
        "bad-json.json": (b'{"traceEvents": [{"ph": "X",, "x": 1}' + b" " * 200 + b"]}", "invalid JSON in event 0"),
        "nsys.sqlite": (b"SQLite format 3\x00" + b"\x00" * 100, "an SQLite database (an Nsight Systems export?)"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert expected in _cli_error(path, capsys), name
    assert "no such file" in _cli_error(tmp_path / "missing.json", capsys)
    assert "is a folder" in _cli_error(tmp_path, capsys)
    assert "--html" in _cli_error(generated["dense"], capsys, "--html", str(tmp_path / "no" / "dir" / "r.html"))


@pytest.mark.parametrize("cut", [100, 1000, 5000, -200, -3])
def test_truncated_files(tmp_path, capsys, generated, cut):
    data = generated["dense"].read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(data[:cut])
    assert "truncated" in _cli_error(path, capsys)
    comp = gzip.compress(data)
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(comp[: min(max(cut, 30), len(comp) // 2) if cut > 0 else cut])
    assert "truncated" in _cli_error(gz, capsys)


def test_array_form_and_trailing_comma(tmp_path, generated):
    events = json.loads(generated["dense"].read_text())["traceEvents"]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(events)[:-1] + ",]")
    assert analyze(path).phase("decode").gemms == 16


# ---------------------------------------------------------------------------------------------
# A large trace: time and peak memory. What it proves, that reading streams (memory grows with
# the events kept, about half the file's size, never with the file's text), holds at any size
# past the reader's 1 MB chunks: 64 MB shows it as well as 200 MB did (+34 MB vs +104 MB, both
# 0.52 of the file) in a third of the time.

_MEASURE = textwrap.dedent("""
    import json, resource, sys, threading, time
    from twofour.dispatch.trace import analyze, load

    def anon_kb():
        # Anonymous resident memory: what the process allocated. Total RSS also counts shared
        # library pages (torch's are hundreds of MB), which the kernel may drop and fault back in.
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))

    peak = [anon_kb()]
    base = peak[0]
    running = True

    def sample():
        while running:
            peak[0] = max(peak[0], anon_kb())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    tr = load(sys.argv[1])
    t_load = time.perf_counter() - t0
    after_load = anon_kb()
    ph = analyze(tr).phase("decode")
    t_all = time.perf_counter() - t0
    running = False
    sampler.join()
    peak[0] = max(peak[0], anon_kb())
    print(json.dumps({"events": len(tr), "t_load": t_load, "t_all": t_all, "base_kb": base, "load_kb": after_load,
                      "peak_kb": peak[0], "hwm_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "gemms": ph.gemms, "sparse": ph.sparse_gemms, "culprit": ph.culprit}))
""")


TRACE_BYTES = 64_000_000


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measures memory through /proc/self/status")
def test_a_64_mb_trace_streams(tmp_path, capsys):
    path = tmp_path / "big.json"
    t0 = time.perf_counter()
    with open(path, "w") as f:
        w = _Writer(f)
        while f.tell() < TRACE_BYTES:
            w.step(f"decode_step_{w.ext}", layers=32, sparse=True, gemm_us=20.0, setup_us=50.0)
        w.close()
    t_gen = time.perf_counter() - t0
    size_mb = path.stat().st_size / 1e6
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    m = json.loads(done.stdout.strip().splitlines()[-1])
    base_mb, load_mb, peak_mb = m["base_kb"] / 1024, m["load_kb"] / 1024, m["peak_kb"] / 1024
    summary = (f"large trace: {size_mb:.0f} MB, {m['events']:,} events (written in {t_gen:.1f} s); load "
               f"{m['t_load']:.1f} s, load + analyze {m['t_all']:.1f} s; peak RSS {m['hwm_kb'] / 1024:.0f} MB in all; "
               f"anonymous memory {base_mb:.0f} MB after importing twofour (torch), {load_mb:.0f} MB after "
               f"reading, peak {peak_mb:.0f} MB: +{peak_mb - base_mb:.0f} MB for the trace")
    with capsys.disabled():
        print("\n" + summary)
    assert m["sparse"] == m["gemms"] > 0 and m["culprit"] == "aten::_cslt_sparse_mm"
    assert peak_mb - base_mb < 0.75 * size_mb, "reading must stream, peak memory well under the file's size: " + summary
    per_event = (m["peak_kb"] - m["base_kb"]) * 1024 / m["events"]
    assert per_event < 200, f"read.py's docstring says about 150 bytes per event at peak, measured {per_event:.0f}"
    os.unlink(path)


# ---------------------------------------------------------------------------------------------
# On a GPU: record a fresh trace of the small model, dense and with packed 2:4 linears


@pytest.mark.gpu
def test_gpu_trace_of_the_small_model_dense_and_packed(tmp_path):
    from torch.profiler import ProfilerActivity, profile, record_function

    import twofour
    from twofour.quality.model import ModelConfig, TinyLM, prunable_linears

    torch.manual_seed(0)
    model = TinyLM(ModelConfig(d_model=256, n_layers=2, n_heads=4, seq_len=64)).half().cuda().eval()
    with torch.no_grad():
        for layer in prunable_linears(model).values():
            layer.weight.copy_(twofour.prune(layer.weight)[0])
    tokens = torch.randint(0, 256, (4, 64), device="cuda")

    def record(path):
        with torch.no_grad():
            for _ in range(2):
                model(tokens[:, -8:])
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for i in range(4):
                    with record_function(f"decode_step_{i}"):
                        model(tokens[:, -8:])
                torch.cuda.synchronize()
        prof.export_chrome_trace(str(path))
        return path

    dense = record(tmp_path / "dense.json")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*prototype.*")
        for layer in prunable_linears(model).values():
            layer.weight = torch.nn.Parameter(torch.sparse.to_sparse_semi_structured(layer.weight.detach()),
                                              requires_grad=False)
    sparse = record(tmp_path / "sparse.json")
    ph = analyze(sparse, baseline=dense).phase("decode")
    n = len(ph.steps)
    assert n == 4
    assert ph.sparse_gemms >= 12 * n, ph.verdicts()[0]  # 2 blocks x 6 packed linears per step
    assert ph.gemms - ph.sparse_gemms >= n  # the LM head stays dense
    assert ph.time_us.get(ATTENTION, 0) > 0
    assert ph.comparison is not None and ph.comparison.gemm_speedup > 0
    assert analyze(dense).phase("decode").sparse_gemms == 0
    print(analyze(sparse, baseline=dense))


def test_trace_names_are_escaped_and_only_regular_files_are_read(tmp_path):
    import json as _json
    import os as _os

    from twofour.dispatch.trace import TraceError, analyze, load

    evil = "gemm\x1b[2J\nFORGED ROW\r"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "decode_step_0", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 50, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "kernel", "name": evil, "ts": 10, "dur": 40, "pid": 0, "tid": 7},
    ]
    path = tmp_path / "evil.json"
    path.write_text(_json.dumps({"traceEvents": events, "deviceProperties": [{"name": "GPU\x07\n"}]}))
    tr = load(path)
    assert all(n.isprintable() for n in tr.names) and any("\\x1b[2J\\nFORGED ROW\\r" in n for n in tr.names)
    assert tr.device_name == "GPU\\x07\\n"
    text = str(analyze(tr))
    assert "\x1b" not in text and "\nFORGED ROW" not in text
    fifo = tmp_path / "fifo"
    _os.mkfifo(fifo)
    with pytest.raises(TraceError, match="is not a regular file"):
        load(fifo)  # returns at once: a FIFO is never opened


def test_an_error_shows_the_path_escaped(tmp_path):
    # A file name can carry terminal escape sequences; an error message must not replay them.
    name = tmp_path / "trace\x1b[31m.json"
    with pytest.raises(TraceError) as info:
        load(name)
    assert "\x1b" not in str(info.value) and "\\x1b[31m.json: no such file" in str(info.value)
    name.write_bytes(b"")
    with pytest.raises(TraceError, match=r"\\x1b\[31m\.json: the file is empty"):
        load(name)


# ---------------------------------------------------------------------------------------------
# Bounded work and memory on hostile files; the report as plain data


def test_the_reader_keeps_at_most_1_mb_of_top_level_values(tmp_path):
    # 1,500 top-level keys of 1 MB each once held 6.1 GB: every value up to 1 MB was kept
    value = "[" + ",".join(["0"] * 300_000) + "]"  # 600 kB of text
    text = ('{"deviceProperties": [{"name": "NVIDIA H200"}], '
            + "".join(f'"k{i}": {value}, ' for i in range(5)) + '"traceEvents": [{"ph": "M"}]}')
    s = _jsonstream.ChromeTraceStream(io.BytesIO(text.encode()))
    assert sum(1 for _ in s.events()) == 1
    kept = sum(len(json.dumps(v)) for v in s.meta.values())
    assert kept <= 1 << 20 and s.meta["deviceProperties"] == [{"name": "NVIDIA H200"}]


def test_running_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    from twofour.dispatch.trace import read

    def no_memory(self):
        raise MemoryError
        yield

    monkeypatch.setattr(read.ChromeTraceStream, "events", no_memory)
    assert "not enough memory to read this trace" in _cli_error(recorded("dense-eager"), capsys)


def test_the_overhead_event_of_a_gap_is_found_by_bisection_as_a_walk_would(tmp_path):
    import numpy as np

    from twofour.dispatch.trace.index import Index

    rng = np.random.default_rng(0)
    tr = load(recorded("sparse-eager"))
    n = 400  # overlapping profiler-overhead events of every length
    ts = rng.uniform(tr.ts.min(), tr.ts.max(), n)
    dur = rng.exponential(200.0, n)
    ix = Index(tr)
    ix.overhead = np.argsort(ts, kind="stable")  # rows 0..n-1 of a stand-in column set
    ix.tr = type("T", (), {"ts": ts})()
    ix.end = ts + dur
    ix.overhead_ts, ix.overhead_reach = ts[ix.overhead], np.maximum.accumulate((ts + dur)[ix.overhead])
    for _ in range(2000):
        a = rng.uniform(ts.min() - 100, ts.max() + 100)
        b = a + rng.exponential(300.0)
        walk = next((i for i in range(n) if min(ts[i] + dur[i], b) - max(ts[i], a) >= 0.5 * (b - a)), -1)
        assert ix.overhead_covering(a, b) == walk


def test_convolution_kernels_are_not_eligible_gemms():
    # cuDNN runs convolutions as implicit GEMMs; PyTorch's 2:4 path serves linear layers only
    from twofour.dispatch.kernels import classify

    for name in ("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nchw_tilesize64x64x64_stage4",
                 "sm80_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x64x64",
                 "sm80_xmma_wgrad_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc",
                 "implicit_convolve_sgemm", "aten::cudnn_convolution", "aten::convolution"):
        assert classify(name) == "other" and trace_class(name, classify(name)) == "other", name
    assert classify("sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32") == "dense-gemm"


def test_html_into_a_path_ending_in_a_slash_is_refused_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _cli_error(recorded("dense-eager"), capsys, "--html", "newdir/")
    assert "names a folder" in err and "newdir/report.html" in err and not (tmp_path / "newdir").exists()


def test_the_report_is_plain_data_rendered_by_its_caller():
    from twofour.dispatch.trace import TraceReport, report_html
    from twofour.dispatch.trace import report as report_module

    r = analyze(recorded("dense-eager"))
    assert TraceReport.__str__ is object.__str__ and not hasattr(r, "to_html")
    assert not hasattr(report_module, "report_text")  # the data model does not import its renderer
    assert report_text(r).startswith("twofour trace: ") and report_html(r).startswith("<!doctype html>")
