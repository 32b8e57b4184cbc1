"""The kernel argument slots ``gsample.backend.cuda.module.launch`` hands ``cuLaunchKernel``
(host only: no GPU needed)."""

import ctypes
import struct

import numpy as np
import pytest
import torch

from gsample.backend.cuda.module import _arg, _params


def _slots(params, n):
    """The 8 bytes each of the ``n`` parameter pointers points at, as unsigned ints."""
    return [ctypes.c_uint64.from_address(params[i]).value for i in range(n)]


def test_each_argument_fills_its_64_bit_slot():
    args = [3, -1, 2**64 - 1, True, np.int32(-7), np.bool_(False), 2.5, np.float32(0.25)]
    slots, params, address = _params([_arg(a) for a in args])
    assert address == ctypes.addressof(params)  # what cuLaunchKernel is given
    got = _slots(params, len(args))
    assert got[0] == 3
    assert got[1] == 2**64 - 1  # -1 as 64-bit two's complement
    assert got[2] == 2**64 - 1  # an unsigned hash word, same bits
    assert got[3] == 1 and got[5] == 0  # bools: a kernel's int reads the low word
    assert got[4] == 2**64 - 7
    assert got[6] == struct.unpack("<Q", struct.pack("<d", 2.5))[0]
    assert got[7] == struct.unpack("<Q", struct.pack("<d", 0.25))[0]
    # the slots are consecutive 8-byte words of one array, which the returned tuple keeps alive
    assert [params[i] - params[0] for i in range(len(args))] == [8 * i for i in range(len(args))]
    assert ctypes.addressof(slots) == params[0]


def test_no_arguments_still_gives_a_valid_array():
    slots, params, _ = _params([])
    assert len(params) == 1 and params[0] == ctypes.addressof(slots)


def test_the_arrays_are_refilled_per_launch_and_a_thread_s_own():
    """The driver copies a launch's arguments when it is launched, so one array per argument
    count is refilled each time; another thread (the pipelined loader's) has its own."""
    import threading

    first = _params([1, 2, 3])
    again = _params([4, 5, 6])
    assert again[0] is first[0] and _slots(again[1], 3) == [4, 5, 6]
    assert _params([7, 8])[0] is not first[0]  # another count: another array
    seen = []
    worker = threading.Thread(target=lambda: seen.append(_params([9, 9, 9])))
    worker.start()
    worker.join()
    assert seen[0][0] is not first[0] and _slots(seen[0][1], 3) == [9, 9, 9]
    assert _slots(first[1], 3) == [4, 5, 6]  # untouched by the other thread


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="contiguous CUDA tensors"):
        _arg(torch.zeros(3))  # a CPU tensor is no device pointer
    with pytest.raises(TypeError, match="kernel argument of type str"):
        _arg("3")
