"""An independent implementation of the safetensors format (numpy + json),
for tests/test_safetensors.c:

  safetensors_oracle.py write DIR   writes DIR/py.safetensors and DIR/py.txt
                                    (each tensor's name, then its values as
                                    text, C order; bools as 0/1)
  safetensors_oracle.py check DIR   reads DIR/c.safetensors written by
                                    tcompile and checks its layout and values;
                                    exit status 0 when it is right
"""
import json
import struct
import sys

import numpy as np


def bf16_bits(a):
    """float32 values exactly representable in bfloat16 -> their 16-bit patterns"""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0)
    return (bits >> 16).astype("<u2")


def save_file(path, arrays, metadata=None):
    """arrays: name -> numpy array (float32/float16/float64/int64/int32/bool), in a safetensors file"""
    codes = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
             np.dtype(np.int64): "I64", np.dtype(np.int32): "I32", np.dtype(np.bool_): "BOOL"}
    header, data, at = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        raw = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": codes[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        data.append(raw)
        at += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(data))


def write(d):
    rng = np.random.default_rng(7)
    tensors = []  # (name, dtype, shape, bytes, values as float64)
    f32 = rng.uniform(-3, 3, (3, 4)).astype(np.float32)
    tensors.append(("a.f32", "F32", f32.shape, f32.astype("<f4").tobytes(), f32.ravel()))
    f16 = rng.uniform(-3, 3, (5,)).astype(np.float16)
    tensors.append(("b.f16", "F16", f16.shape, f16.astype("<f2").tobytes(), f16.astype(np.float64).ravel()))
    bf = (rng.integers(-64, 64, (2, 3)) / 8.0).astype(np.float32)
    tensors.append(("c.bf16", "BF16", bf.shape, bf16_bits(bf).tobytes(), bf.astype(np.float64).ravel()))
    f64 = rng.uniform(-1e3, 1e3, (2, 2))
    tensors.append(("d.f64", "F64", f64.shape, f64.astype("<f8").tobytes(), f64.astype(np.float32).astype(np.float64).ravel()))
    for name, dt, np_dt, lo, hi in (("e.i64", "I64", "<i8", -(2**31), 2**31), ("f.i32", "I32", "<i4", -(2**31), 2**31),
                                    ("g.i16", "I16", "<i2", -(2**15), 2**15), ("h.i8", "I8", "i1", -128, 128),
                                    ("i.u8", "U8", "u1", 0, 256), ("j.u16", "U16", "<u2", 0, 2**16)):
        v = rng.integers(lo, hi, (4,)).astype(np_dt)
        v[0] = lo  # the extremes too
        v[1] = hi - 1
        tensors.append((name, dt, v.shape, v.tobytes(), v.astype(np.float64)))
    b = np.array([True, False, True])
    tensors.append(("k.bool", "BOOL", b.shape, b.astype(np.uint8).tobytes(), b.astype(np.float64)))
    s = np.array(1.25, dtype=np.float32)
    tensors.append(("l.scalar", "F32", (), s.astype("<f4").tobytes(), s.reshape(1).astype(np.float64)))
    tensors.append(("m.empty", "F32", (0, 2), b"", np.zeros(0)))
    header, data, at = {"__metadata__": {"format": "np"}}, b"", 0
    for name, dt, shape, raw, _ in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        data += raw
        at += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(d + "/py.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    with open(d + "/py.txt", "w") as f:
        for name, _, _, _, vals in tensors:
            f.write(name + " " + " ".join(repr(float(x)) for x in vals) + "\n")


def check(d):
    raw = open(d + "/c.safetensors", "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    assert (8 + n) % 8 == 0, "the data does not start 8-byte aligned"
    assert header.pop("__metadata__") == {"format": "pt"}
    widths = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "BOOL": 1}
    at, arrays = 0, {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        assert set(e) == {"dtype", "shape", "data_offsets"}, e
        b, end = e["data_offsets"]
        assert b == at and end - b == widths[e["dtype"]] * int(np.prod(e["shape"])), (name, e)
        buf = data[b:end]
        if e["dtype"] == "F32":
            a = np.frombuffer(buf, "<f4")
        elif e["dtype"] == "F16":
            a = np.frombuffer(buf, "<f2").astype(np.float32)
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif e["dtype"] == "I32":
            a = np.frombuffer(buf, "<i4")
        else:
            a = np.frombuffer(buf, "u1").astype(bool)
        arrays[name] = a.reshape(e["shape"])
        at = end
    assert at == len(data), "bytes after the last tensor"
    x = arrays["x"]
    assert x.shape == (2, 3, 4) and x.dtype == np.float32
    assert np.allclose(arrays["y.half"], x, rtol=1e-3, atol=1e-3), "f16 differs"
    assert np.allclose(arrays["z.bf"], x, rtol=1e-2, atol=1e-2), "bf16 differs"
    assert list(arrays["n\u00e9"]) == list(range(-3, 3)), arrays["n\u00e9"]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    try:
        (write if sys.argv[1] == "write" else check)(sys.argv[2])
    except AssertionError as e:
        print("safetensors_oracle: check failed:", e)
        sys.exit(1)
