"""The .npy files of the command-line tests, in plain Python (no NumPy): version 1.0 to write,
1.0 and 2.0 to read, little-endian float64 (<f8), float32 (<f4) and int64 (<i8), C order.
The shell tests' helpers import it (tests/cli_test_helpers.sh puts tests/ on PYTHONPATH).

    write(path, "<f8", [2, 3], [0.0, 1.0, ...])
    descr, shape, values = read(path)
"""
import math
import struct

CODES = {"<f8": "d", "<f4": "f", "<i8": "q"}


def write(path, descr, shape, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), CODES[descr]), *values))


def read(path):
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", "%s is not an npy file" % path
    major = data[6]
    length, start = (struct.unpack("<H", data[8:10])[0], 10) if major == 1 else (struct.unpack("<I", data[8:12])[0], 12)
    header = eval(data[start:start + length].decode("latin1"))
    count = math.prod(header["shape"])
    code = CODES[header["descr"]]
    size = struct.calcsize(code)
    values = struct.unpack("<%d%s" % (count, code), data[start + length:start + length + size * count])
    return header["descr"], list(header["shape"]), list(values)
