"""No leaks across 1,000 calls: an op, a loss and a backward, with NumPy views of the value
and the gradients taken each time; the resident set size (from /proc/self/statm) after a
warm-up may grow by at most LEAK_BOUND_MIB. A leak of one 4x64 float64 gradient per call
would grow it by 2 MiB over 1,000 calls."""
import os

import numpy as np
import pytest

import nce

CALLS = 1000
WARMUP = 100
LEAK_BOUND_MIB = 1.0


def resident_mib():
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def one_call(q, p, w):
    qv = nce.Var(q, requires_grad=True)
    loss = nce.infonce(nce.l2_normalize(nce.matmul(qv, w)), nce.l2_normalize(p), tau=0.07)
    loss.backward()
    views = (loss.numpy(), qv.grad, w.grad, nce.Tensor(q).numpy())
    w.zero_grad()
    return float(views[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm (Linux)")
def test_rss_is_stable_over_a_thousand_calls():
    rng = np.random.default_rng(0)
    q, p = rng.standard_normal((4, 64)), rng.standard_normal((4, 64))
    w = nce.Var(rng.standard_normal((64, 64)), requires_grad=True)
    for _ in range(WARMUP):
        one_call(q, p, w)
    before = resident_mib()
    for _ in range(CALLS):
        one_call(q, p, w)
    after = resident_mib()
    print(f"RSS {before:.2f} MiB after {WARMUP} warm-up calls, {after:.2f} MiB after {CALLS} more "
          f"(growth {after - before:+.3f} MiB, bound {LEAK_BOUND_MIB} MiB)")
    assert after - before <= LEAK_BOUND_MIB


def test_errors_leak_nothing_either():
    bad = np.ones((3, 5))
    good = np.ones((3, 4))
    for _ in range(WARMUP):
        with pytest.raises(ValueError):
            nce.infonce(nce.Var(good, requires_grad=True), bad)
    before = resident_mib()
    for _ in range(CALLS):
        with pytest.raises(ValueError):
            nce.infonce(nce.Var(good, requires_grad=True), bad)
    assert resident_mib() - before <= LEAK_BOUND_MIB
