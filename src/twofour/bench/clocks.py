"""The GPU's clocks, power and temperature around a measurement, where the GPU exposes them.

A GEMM timed while the GPU throttles (power cap, heat) is slower, and nothing in the timing
says so. ``twofour bench`` therefore reads the SM and memory clocks, power and temperature
before and after each timing mode of each point (:func:`read_gpu_state`, through ``pynvml`` or
``nvidia-smi``), and :mod:`.flags` flags a mode whose SM clock fell.

Example:
    >>> parse_smi_line("1980, 3201, 251.37, 45")
    {'sm_clock_mhz': 1980.0, 'mem_clock_mhz': 3201.0, 'power_w': 251.37, 'temperature_c': 45.0}
    >>> parse_smi_line("1980, [N/A], [N/A], 45")["power_w"] is None
    True
"""

from __future__ import annotations

import subprocess

__all__ = ["read_gpu_state", "parse_smi_line", "FIELDS", "SMI_QUERY"]

FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c")
SMI_QUERY = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits"]
_UNAVAILABLE: set[str] = set()  # readers that failed once in this process: not asked again


def parse_smi_line(line: str) -> dict | None:
    """One ``nvidia-smi`` CSV line as :data:`FIELDS` (None per value it does not report); None if unreadable."""
    parts = [p.strip() for p in line.strip().split(",")]
    if len(parts) != len(FIELDS):
        return None
    out = {}
    for name, text in zip(FIELDS, parts):
        try:
            out[name] = float(text)
        except ValueError:  # "[N/A]", "[Not Supported]"
            out[name] = None
    return out if any(v is not None for v in out.values()) else None


def _read_pynvml(index: int) -> dict | None:
    import pynvml

    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(index)
        out = {}
        for name, call in (
            ("sm_clock_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
            ("mem_clock_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)),
            ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0),
            ("temperature_c", lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
        ):
            try:
                out[name] = float(call())
            except pynvml.NVMLError:
                out[name] = None
        return out if any(v is not None for v in out.values()) else None
    finally:
        pynvml.nvmlShutdown()


def _read_smi(index: int) -> dict | None:
    run = subprocess.run(SMI_QUERY + [f"--id={index}"], capture_output=True, text=True, timeout=10)
    lines = run.stdout.strip().splitlines()
    return parse_smi_line(lines[0]) if run.returncode == 0 and lines else None


def read_gpu_state(index: int = 0) -> dict | None:
    """SM and memory clock (MHz), power (W) and temperature (°C) of GPU ``index`` now, or None.

    The dict also says where the numbers came from (``"source"``). Any failure of a reader
    (not installed, no driver, no permission, a timeout) makes it None, never an exception.
    """
    for source, reader in (("pynvml", _read_pynvml), ("nvidia-smi", _read_smi)):
        if source in _UNAVAILABLE:
            continue
        try:
            state = reader(index)
        except Exception:  # an optional reading: whatever the tool raises, go on without it
            _UNAVAILABLE.add(source)
            continue
        if state is not None:
            return {**state, "source": source}
        _UNAVAILABLE.add(source)
    return None
