"""The hand placement of UB buffers the library's resident kernels share (the RMSNorm kernels'
resident schedules, softmax's resident and streamed schedules): the Python twin of UbPlacer in
include/cann_ops_tilelang/core.h, one definition, so every kernel places its buffers as its C++
counterpart does (python/tests/test_opslib_twin.py and test_opslib_softmax.py compare the IR)."""

from typing import Callable


def ub_placer() -> Callable[[int, int], int]:
    """The UB of one AIV given out in order, each buffer at the residue modulo 512 asked (so the two
    sources of a vector instruction can start 256 bytes apart: no bank-group conflict,
    docs/calibration.md); sizes rounded up to 32 bytes."""
    at = 0

    def place(nbytes: int, residue: int) -> int:
        nonlocal at
        at += ((residue - at % 512) % 512 + 512) % 512
        a = at
        at += (nbytes + 31) // 32 * 32
        return a

    return place
