"""twofour.device: the verdict rules (pure functions) and the probe on this machine."""

from __future__ import annotations

import pytest
import torch

from twofour import device
from twofour.device import Environment, environment, pick_device, sparse_backends_for


@pytest.mark.parametrize(
    ("capability", "expected"),
    [
        (None, ()),
        ((7, 5), ()),  # T4
        ((8, 0), ("cuSPARSELt", "CUTLASS")),  # A100
        ((8, 9), ("cuSPARSELt", "CUTLASS")),  # L4
        ((9, 0), ("cuSPARSELt",)),  # H100 / H200
        ((12, 0), ("cuSPARSELt",)),  # consumer Blackwell
    ],
)
def test_backends_by_capability(capability, expected):
    assert sparse_backends_for(capability) == expected


@pytest.mark.parametrize("bad", [(8,), [8, 0], (8.0, 0), "8.0", (True, 0)])
def test_backends_rejects_malformed_capability(bad):
    with pytest.raises(TypeError, match="capability"):
        sparse_backends_for(bad)


def test_verdict_without_cuda_names_the_cpu_path():
    backends, reason = device._verdict(False, None, False)
    assert backends == ()
    assert "No CUDA GPU" in reason and "CPU" in reason


def test_verdict_old_gpu_names_the_minimum_capability():
    backends, reason = device._verdict(True, (7, 5), True)
    assert backends == ()
    assert "7.5" in reason and "8.0" in reason


def test_verdict_hopper_needs_cusparselt():
    assert device._verdict(True, (9, 0), True)[0] == ("cuSPARSELt",)
    backends, reason = device._verdict(True, (9, 0), False)
    assert backends == () and "cuSPARSELt" in reason


def test_verdict_ampere_without_cusparselt_keeps_cutlass():
    assert device._verdict(True, (8, 0), False)[0] == ("CUTLASS",)


def test_pick_device_matches_torch():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected
    assert pick_device("cpu") == torch.device("cpu")


def test_pick_device_rejects_unknown_name():
    with pytest.raises(ValueError, match="prefer"):
        pick_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_pick_device_cuda_without_gpu_raises_clearly():
    with pytest.raises(RuntimeError, match="prefer='cuda'"):
        pick_device("cuda")


def test_environment_is_consistent_with_torch():
    env = environment()
    assert isinstance(env, Environment)
    assert env.torch_version == torch.__version__
    assert env.cuda_available == torch.cuda.is_available()
    assert env.device.type == pick_device().type
    assert env.sparse_ok == bool(env.backends)
    assert env.reason
    if not env.cuda_available:
        assert env.gpu_name is None and env.capability is None and not env.sparse_ok


def test_environment_survives_torch_without_cusparselt_module(monkeypatch):
    # torch < 2.4 has no torch.backends.cusparselt; the probe must not crash there.
    monkeypatch.delattr(torch.backends, "cusparselt", raising=False)
    assert device._cusparselt() == (False, None)
    assert environment().cusparselt_available is False


def test_text_and_html_views_show_the_verdict():
    env = Environment(
        torch_version="2.4.0",
        python_version="3.11.0",
        cuda_available=True,
        cuda_version="12.4",
        gpu_name="NVIDIA A100 <80GB>",
        capability=(8, 0),
        cusparselt_available=True,
        cusparselt_version=602,
        backends=("cuSPARSELt", "CUTLASS"),
        reason="ok",
    )
    text = str(env)
    assert "8.0" in text and "cuSPARSELt, CUTLASS" in text and "expected to work" in text
    page = env._repr_html_()
    assert "<table" in page and "&lt;80GB&gt;" in page  # escaped, not raw markup


@pytest.mark.gpu
def test_environment_on_gpu_reports_the_device():
    env = environment()
    assert env.gpu_name and env.capability is not None
    assert env.sparse_ok == (env.capability >= (8, 0) and bool(env.backends))
