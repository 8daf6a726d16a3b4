"""twofour.pack / unpack / packed bytes: the checks and numbers a one-token bug would break.

Each test names the one-token mistake it catches (`make mutate` reports the ones no test catches).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import twofour
from twofour.packing import Packed, index_bits, packed_bytes, packed_ratio


def _two_four(rows, K):
    W = torch.zeros(rows, K)
    W[:, 0::4] = 1.0
    W[:, 3::4] = -2.0
    return W


def test_corrupt_metadata_after_the_first_block_names_its_row():
    # unpack reads 512 x 256 in blocks of 256 rows; the error must name row 300, not row 44.
    p = twofour.pack(_two_four(512, 256))
    byte = int(p.meta[300, 2])
    p.meta[300, 2] = (byte & 0xF0) | 0b0101  # group 4: positions (1, 1), a repeat
    with pytest.raises(ValueError, match=r"packed.meta is corrupt: 1 groups .*first: row 300, group 4, positions \[1, 1\]"):
        twofour.unpack(p)


def test_corrupt_metadata_counts_every_bad_group():
    p = twofour.pack(_two_four(4, 16))
    p.meta[1, 0] = 0b0110_0101  # groups 0 and 1 of row 1: (1, 1) and (2, 1)
    p.meta[3, 1] = (int(p.meta[3, 1]) & 0x0F) | 0b1111_0000  # group 3 of row 3: (3, 3)
    with pytest.raises(ValueError, match=r"corrupt: 3 groups name a position outside 0\.\.3 .*first: row 1, group 0"):
        twofour.unpack(p)


def test_a_position_equal_to_m_is_out_of_range():
    # With 1:3 a position takes 2 bits, so a code can say 3: one past the last position 2. The
    # range check must refuse it (position >= m), not only positions above m.
    W = torch.tensor([[0.0, 5.0, 0.0, 7.0, 0.0, 0.0]])
    p = twofour.pack(W, 1, 3)
    assert p.indices().tolist() == [[[1], [0]]]
    assert torch.equal(twofour.unpack(p), W)
    p.meta[0, 0] = int(p.meta[0, 0]) | 0b11  # group 0 now names position 3
    with pytest.raises(ValueError, match=r"outside 0\.\.2 .*first: row 0, group 0, positions \[3\]"):
        twofour.unpack(p)


def test_index_bits_and_packed_bytes_by_hand():
    assert [index_bits(m) for m in (2, 3, 4, 5, 8, 16)] == [1, 2, 2, 3, 3, 4]
    # 4096 x 14336 fp16, 2:4: half the values (2 bytes) plus 2 bits per kept value.
    kept = 4096 * 14336 // 2
    assert packed_bytes((4096, 14336), torch.float16) == kept * 2 + kept * 2 // 8
    assert packed_bytes((4096, 14336), torch.int8) == kept * 1 + kept * 2 // 8
    # fp32 is stored 1:2 with 4 metadata bits per kept value (as the hardware writes it).
    assert packed_bytes((8, 16), torch.float32, 1, 2) == 64 * 4 + 64 * 4 // 8
    # A partial byte rounds up: 3 kept int8 values of 1:4 need 3 bytes + 6 bits -> 4 bytes.
    assert packed_bytes((1, 12), torch.int8, 1, 4) == 4
    assert packed_ratio(torch.float16) == 0.5625
    assert packed_ratio(torch.int8) == 0.625
    assert packed_ratio(8) == 0.625  # a bit width (fp8)
    assert packed_ratio(torch.float32, 1, 2) == 0.5625


def test_packed_accounts_its_bytes_and_prints_them():
    p = twofour.pack(_two_four(8, 32).half())
    assert p.n_bytes == 8 * 16 * 2 + 8 * 4  # values + one nibble per group
    assert p.dense_n_bytes == 8 * 32 * 2
    assert repr(p) == "Packed(2:4, shape=(8, 32), dtype=float16, 288 bytes = 0.5625 of dense)"


def test_packed_refuses_disagreeing_parts():
    p = twofour.pack(_two_four(4, 16))
    with pytest.raises(ValueError, match=r"values has shape \(4, 6\) but shape \(4, 16\) with 2:4 needs \(4, 8\)"):
        Packed(p.values[:, :6], p.meta, (4, 16), torch.float32)
    with pytest.raises(ValueError, match=r"meta must be uint8 of shape \(4, 2\)"):
        Packed(p.values, p.meta[:, :1], (4, 16), torch.float32)
    with pytest.raises(ValueError, match="values dtype torch.float32 but dtype torch.float16"):
        Packed(p.values, p.meta, (4, 16), torch.float16)
    with pytest.raises(ValueError, match="K a multiple of m=4"):
        Packed(p.values, p.meta, (4, 18), torch.float32)
    with pytest.raises(TypeError, match="Packed.meta must be a torch.Tensor"):
        Packed(p.values, p.meta.tolist(), (4, 16), torch.float32)


def test_pack_keeps_top_up_positions_of_underfull_groups():
    # An all-zero group keeps positions 2 and 3 (PyTorch's CUTLASS encoder's choice); a group
    # with one non-zero at 0 keeps 0 and 2.
    p = twofour.pack(torch.tensor([[0.0, 0.0, 0.0, 0.0, 9.0, 0.0, 0.0, 0.0]]))
    assert p.indices().tolist() == [[[2, 3], [0, 2]]]
    assert p.values.tolist() == [[0.0, 0.0, 9.0, 0.0]]


@pytest.mark.parametrize("bits", [0, -4, True])
def test_a_bit_width_must_be_positive(bits):
    with pytest.raises(TypeError):
        packed_ratio(bits)
    assert packed_ratio(4, 4, 8, meta_bits_per_value=1) == 0.625  # FP4's paired 4:8


def test_a_wide_row_packs_in_blocks_that_keep_whole_groups():
    # A 72,000-column row is packed in column blocks; with m = 3 a block must end on a multiple
    # of 8 * 3 columns (whole groups, whole metadata bytes), not at 65,536.
    K = 3 * 24_000
    W = torch.zeros(2, K)
    W[:, 0::3] = 1.0
    W[1, 65_535], W[1, 65_536] = 0.0, 5.0  # the group across column 65,536 keeps its middle element
    p = twofour.pack(W, 1, 3)
    assert torch.equal(twofour.unpack(p), W)


def test_corrupt_metadata_in_a_later_column_block_is_located():
    # 1:3 codes are 2 bits wide (the general decoding path). A 72,000-column row is read in
    # column blocks of 65,520; group 22,000 (columns 66,000-66,002) lies in the second block, whose
    # 6,480 / 3 = 2,160 groups must be decoded as that many, not as if the block started at 0.
    K = 3 * 24_000
    W = torch.zeros(2, K)
    W[:, 1::3] = 1.0
    p = twofour.pack(W, 1, 3)
    p.meta[1, 22_000 // 4] |= 0b11  # group 22,000: the low 2 bits of its byte; position 3 of 0..2
    with pytest.raises(ValueError, match=r"^packed.meta is corrupt: 1 groups .*first: row 1, group 22000, positions \[3\]\)$"):
        twofour.unpack(p)


def test_an_unsupported_dtype_lists_the_supported_ones():
    p = twofour.pack(_two_four(4, 16))
    with pytest.raises(TypeError) as err:
        Packed(p.values, p.meta, (4, 16), torch.complex64)
    message = str(err.value)
    assert message.startswith("Packed.dtype complex64 has no packed N:M form; supported: float64, float32, float16, bfloat16, ")
    assert message.endswith(", int8, uint8, int16, int32")
    assert "float8_e4m3fn, " in message


@pytest.mark.gpu
def test_gpu_to_cutlass_checks_metadata_on_the_device():
    # On CUDA to_cutlass checks 2:4 metadata with byte arithmetic on the GPU (the CPU uses a
    # table): valid metadata must pass and give the CPU's result, corrupt metadata the CPU's error.
    W = torch.zeros(64, 128, dtype=torch.float16)
    W[:, 0::4], W[:, 3::4] = 1.0, -2.0  # every group keeps positions (0, 3): low and high nibbles
    cpu = twofour.pack(W)
    values, meta = twofour.to_cutlass(dataclasses.replace(cpu, values=cpu.values.cuda(), meta=cpu.meta.cuda()))
    cpu_values, cpu_meta = twofour.to_cutlass(cpu)
    assert torch.equal(values.cpu(), cpu_values) and torch.equal(meta.cpu(), cpu_meta)
    for byte in (0x5E, 0xE5):  # the high group, then the low group, names positions (1, 1)
        bad_meta = cpu.meta.clone()
        bad_meta[3, 5] = byte
        bad = dataclasses.replace(cpu, meta=bad_meta)
        with pytest.raises(ValueError) as on_cpu:
            twofour.to_cutlass(bad)
        with pytest.raises(ValueError) as on_gpu:
            twofour.to_cutlass(dataclasses.replace(bad, values=bad.values.cuda(), meta=bad.meta.cuda()))
        assert str(on_gpu.value) == str(on_cpu.value)
        assert "packed.meta is corrupt" in str(on_gpu.value)
