"""Shared helpers of the nce Python tests: the C++ programs they compare against.

NCE_EXE is the `nce` command line and NCE_OP_REFERENCE the op_reference helper
(python/tests/op_reference.cpp); meson test sets both, and PYTHONPATH to the module.
"""
import os
import subprocess

import numpy as np
import pytest


def program(variable):
    path = os.environ.get(variable)
    if not path or not os.path.exists(path):
        pytest.skip(f"{variable} is not set to a built program (run through meson test)")
    return path


@pytest.fixture
def nce_exe():
    return program("NCE_EXE")


@pytest.fixture
def op_reference():
    return program("NCE_OP_REFERENCE")


def run_program(arguments):
    """Runs a C++ program; returns (exit code, stdout, stderr)."""
    done = subprocess.run(arguments, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def save_inputs(directory, arrays):
    os.makedirs(directory, exist_ok=True)
    for name, value in arrays.items():
        np.save(os.path.join(directory, name + ".npy"), value)


def assert_bitwise_equal(actual, expected, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} vs {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    assert np.array_equal(actual, expected), f"{what}: values differ, largest |difference| " \
        f"{np.max(np.abs(actual.astype(np.float64) - expected.astype(np.float64)))}"
