"""Kernels from Python without a GPU: size binding from the arrays' shapes and every argument check
against NumPy arrays (they all happen before a device is touched)."""

import numpy as np
import pytest

import rtcg
from conftest import example

AXPY = """kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
  for i in 0..n { y[i] = a * x[i] + y[i]; }
}"""
DG_DIFF = example("dg_diff.rtcg")
SHIFTED = """kernel pad(n: int, m: int, x: f32[n + 2, 4*m], out y: f32[n, m]) {
  for i in 0..n, j in 0..m { y[i, j] = x[i + 2, 4*j + 3]; }
}"""
FLAT = """kernel sq(n: int, x: f32[n*n], out y: f32[n*n]) { for i in 0..n*n { y[i] = x[i] * x[i]; } }"""


def dg_args(K=10, Np=4):
    f = np.float32
    return [np.zeros((Np, Np), f), np.zeros((Np, Np), f), np.zeros((Np, Np), f), np.zeros((K, Np), f),
            np.zeros((K, Np), f), np.zeros((K, Np), f), np.zeros((K, Np), f)]


def test_sizes_from_shapes():
    k = rtcg.Kernel(DG_DIFF)
    assert k.bind(*dg_args(10, 4)) == {"K": 10, "Np": 4}
    assert k.bind(*dg_args(33, 7)) == {"K": 33, "Np": 7}


def test_sizes_from_linear_extents():
    k = rtcg.Kernel(SHIFTED)
    x = np.zeros((12, 20), np.float32)
    y = np.zeros((10, 5), np.float32)
    assert k.bind(x, y) == {"n": 10, "m": 5}
    info = k.check(x, y)
    assert info["signature"].startswith("pad(x: f32[12, 20]")


def test_size_only_in_a_nonlinear_extent_must_be_given():
    k = rtcg.Kernel(FLAT)
    x = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="cannot be bound from the arguments' shapes"):
        k.bind(x, x.copy())
    assert k.bind(x, np.zeros(16, np.float32), sizes={"n": 4}) == {"n": 4}
    assert rtcg.Kernel(FLAT, sizes={"n": 4}).bind(x, np.zeros(16, np.float32)) == {"n": 4}


def test_one_check_per_binding_is_cached(monkeypatch):
    from rtcg import _kernel

    calls = {"bind_shapes": 0, "check": 0}
    for name in calls:
        real = getattr(_kernel.native, name)

        def counted(*a, _real=real, _name=name):
            calls[_name] += 1
            return _real(*a)

        monkeypatch.setattr(_kernel.native, name, counted)
    k = rtcg.Kernel(AXPY)
    x = np.ones(8, np.float32)
    a = k.check(2.0, x, np.zeros(8, np.float32))
    b = k.check(3.0, x, np.zeros(8, np.float32))
    assert a is b
    assert calls == {"bind_shapes": 1, "check": 1}  # the front end ran once for both calls
    c = k.check(2.0, np.ones(9, np.float32), np.zeros(9, np.float32))
    assert c["sizes"] == {"n": 9}
    assert calls == {"bind_shapes": 2, "check": 2}


def test_wrong_count_names_the_signature():
    k = rtcg.Kernel(AXPY)
    with pytest.raises(TypeError, match=r"axpy takes 3 arguments \(a, x, inout y; its size n is bound"):
        k(np.zeros(3, np.float32), np.zeros(3, np.float32))


def test_dtype_mismatch_is_a_type_error_naming_the_argument():
    k = rtcg.Kernel(AXPY)
    with pytest.raises(TypeError, match=r"argument 3 \(inout y\): expected f32\[8\] \(float32\), given NumPy array of "
                                        r"float64"):
        k.check(2.0, np.zeros(8, np.float32), np.zeros(8))
    with pytest.raises(TypeError, match=r"argument 2 \(x\)"):
        k.check(2.0, np.zeros(8, np.int32), np.zeros(8, np.float32))
    big_endian = np.zeros(8, ">f4")
    with pytest.raises(TypeError, match=r"argument 2 \(x\)"):
        k.check(2.0, big_endian, np.zeros(8, np.float32))


def test_shape_mismatch_is_a_value_error_saying_where_the_size_came_from():
    k = rtcg.Kernel(AXPY)
    with pytest.raises(ValueError, match=r"argument 3 \(inout y\): expected shape \[8\].*n = 8 from argument 2 \(x\)"):
        k.check(2.0, np.zeros(8, np.float32), np.zeros(9, np.float32))
    with pytest.raises(ValueError, match=r"argument 2 \(x\) has 2 dimensions, the parameter 1"):
        k.check(2.0, np.zeros((2, 4), np.float32), np.zeros(8, np.float32))
    dg = rtcg.Kernel(DG_DIFF)
    args = dg_args(10, 4)
    args[5] = np.zeros((10, 5), np.float32)
    with pytest.raises(ValueError, match=r"argument 6 \(out us\)"):
        dg.check(*args)


def test_contiguity_and_writability():
    k = rtcg.Kernel(AXPY)
    strided = np.zeros(16, np.float32)[::2]
    with pytest.raises(ValueError, match=r"argument 2 \(x\).*not contiguous.*ascontiguousarray"):
        k.check(2.0, strided, np.zeros(8, np.float32))
    fortran = np.asfortranarray(np.zeros((6, 8), np.float32))
    with pytest.raises(ValueError, match=r"argument 1 \(x\).*not contiguous"):
        rtcg.Kernel(SHIFTED).check(fortran, np.zeros((4, 2), np.float32))
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    k.check(2.0, ro, np.zeros(8, np.float32))  # an input may be read-only
    with pytest.raises(ValueError, match=r"argument 3 \(inout y\).*read-only"):
        k.check(2.0, np.zeros(8, np.float32), ro)


def test_written_array_must_not_alias_another():
    k = rtcg.Kernel(AXPY)
    y = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"argument 3 \(inout y\) shares memory with argument 2 \(x\)"):
        k.check(2.0, y, y)
    buf = np.zeros(12, np.float32)
    with pytest.raises(ValueError, match="shares memory"):
        k.check(2.0, buf[:8], buf[4:])


def test_scalars():
    k = rtcg.Kernel(AXPY)
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    k.check(2, x, y)  # an int for an f32 scalar
    k.check(np.float32(2), x, y)
    with pytest.raises(TypeError, match=r"argument 1 \(a\): expected a f32 scalar"):
        k.check("2", x, y)
    with pytest.raises(TypeError, match=r"argument 1 \(a\)"):
        k.check(x, x, y)
    with pytest.raises(TypeError, match=r"argument 2 \(x\): expected an array"):
        k.check(2.0, [0.0] * 8, y)
    ints = rtcg.Kernel("kernel s(n: int, c: i32, out y: i32[n]) { for i in 0..n { y[i] = c; } }")
    yi = np.zeros(4, np.int32)
    ints.check(7, yi)
    with pytest.raises(TypeError, match="integer"):
        ints.check(7.5, yi)
    with pytest.raises(ValueError, match="out of the range of i32"):
        ints.check(2**31, yi)


def test_sizes_the_proof_rejects_are_compile_errors():
    shifted = rtcg.Kernel(AXPY.replace("a * x[i]", "a * x[i + 1]"))
    with pytest.raises(rtcg.CompileError, match="out of bounds"):
        shifted.check(2.0, np.zeros(8, np.float32), np.zeros(8, np.float32))


def test_call_without_a_gpu_checks_first_then_needs_a_device():
    import conftest

    if conftest.gpu_available():
        pytest.skip("a GPU is here")
    k = rtcg.Kernel(AXPY)
    with pytest.raises(TypeError):  # argument errors come before the device
        k(2.0, np.zeros(8, np.float32), np.zeros(8))
    with pytest.raises(rtcg.NoDeviceError):
        k(2.0, np.zeros(8, np.float32), np.zeros(8, np.float32))
    with pytest.raises(rtcg.NoDeviceError):
        rtcg.Context(0)
    with pytest.raises(rtcg.NoDeviceError):
        rtcg.tune(AXPY, {"n": 8}, progress=False)


def test_stream_handles():
    from rtcg._arrays import stream_handle

    class TorchLike:
        cuda_stream = 1234

    class CupyLike:
        ptr = 99

    class Protocol:
        def __cuda_stream__(self):
            return (0, 77)

    assert stream_handle(5) == 5 and stream_handle(None) == 0
    assert stream_handle(TorchLike()) == 1234 and stream_handle(CupyLike()) == 99 and stream_handle(Protocol()) == 77
    with pytest.raises(TypeError, match="stream="):
        stream_handle("default")
    with pytest.raises(TypeError, match="stream="):
        stream_handle(True)


def test_cuda_array_interface_objects_are_described_without_a_gpu():
    from rtcg._arrays import describe

    class Fake:
        __cuda_array_interface__ = {"data": (0x10000, False), "shape": (4, 3), "typestr": "<f4", "strides": None,
                                    "version": 3}

    d = describe(Fake())
    assert (d.kind, d.shape, d.dtype, d.contiguous) == ("device", (4, 3), "f32", True)

    class Transposed:
        __cuda_array_interface__ = {"data": (0x10000, False), "shape": (4, 3), "typestr": "<f4", "strides": (4, 16),
                                    "version": 3}

    assert not describe(Transposed()).contiguous
    k = rtcg.Kernel(SHIFTED)
    with pytest.raises(ValueError, match=r"argument 2 \(out y\): the array is not contiguous"):
        k.check(np.zeros((6, 12), np.float32), Transposed())
    k = rtcg.Kernel(AXPY)
    flat = type("Flat", (), {"__cuda_array_interface__": {"data": (0x20000, True), "shape": (8,), "typestr": "<f4",
                                                          "strides": None, "version": 3}})
    with pytest.raises(ValueError, match="read-only"):
        k.check(2.0, np.zeros(8, np.float32), flat())


def test_progress_display_fits_a_terminal():
    import io

    from rtcg._progress import ProgressDisplay, format_progress

    assert format_progress(64, 10, 9, 3.2, 30, 0.0123) == "10/64 measured, 9 verified, best 0.0123 ms [3/30 s]"
    out = io.StringIO()
    p = ProgressDisplay("tuning axpy", stream=out)
    p(64, 10, 9, 3.2, 30, 0.5)
    p(64, 64, 60, 20.0, 30, 0.25)
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("tuning axpy: 10/64 measured")
    assert lines[-1].startswith("tuning axpy: 64/64 measured")


def test_dlpack_exporters_are_described():
    from rtcg._arrays import describe

    class OnlyDlpack:  # an array that speaks DLPack alone (as JAX's do)
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = describe(OnlyDlpack(a))
    assert (d.kind, d.shape, d.dtype, d.contiguous, d.address) == ("host", (3, 4), "f32", True, a.ctypes.data)
    assert not describe(OnlyDlpack(np.asfortranarray(a))).contiguous
    k = rtcg.Kernel(AXPY)
    k.check(2.0, OnlyDlpack(np.zeros(8, np.float32)), np.zeros(8, np.float32))
    with pytest.raises(TypeError, match=r"argument 2 \(x\)"):
        k.check(2.0, OnlyDlpack(np.zeros(8, np.float64)), np.zeros(8, np.float32))


def test_progress_display_updates_one_notebook_output(monkeypatch):
    import sys
    import types

    from rtcg._progress import ProgressDisplay

    shown = []

    class Handle:
        def update(self, data, raw=False):
            shown.append(("update", data["text/plain"]))

    def display(data, raw=False, display_id=False):
        shown.append(("display", data["text/plain"]))
        return Handle()

    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: ZMQInteractiveShell()
    ipython_display = types.ModuleType("IPython.display")
    ipython_display.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython_display)
    p = ProgressDisplay("tuning axpy")
    p(8, 1, 1, 0.5, 30, 0.25)
    p(8, 8, 7, 3.0, 30, 0.125)
    p.close()
    assert [kind for kind, _ in shown] == ["display", "update"]  # one output, updated in place
    assert shown[-1][1] == "tuning axpy: 8/8 measured, 7 verified, best 0.1250 ms [3/30 s]"


def test_cuda_array_interface_stream_asks_for_a_wait_on_another_stream():
    from rtcg._arrays import describe, needs_device_sync

    def cai(stream):
        d = {"data": (0x10000, False), "shape": (4,), "typestr": "<f4", "strides": None, "version": 3}
        if stream is not None:
            d["stream"] = stream
        return type("A", (), {"__cuda_array_interface__": d})()

    assert not needs_device_sync([describe(cai(None))], 1234)
    assert not needs_device_sync([describe(cai(1))], 0)      # the legacy default stream both
    assert not needs_device_sync([describe(cai(1234))], 1234)
    assert needs_device_sync([describe(cai(1234))], 0)
    assert needs_device_sync([describe(cai(None)), describe(cai(99))], 1234)


def test_eight_bit_arrays_are_int8_and_uint8():
    k = rtcg.Kernel("""kernel q(n: int, x: i8[n], out y: u8[n], out z: i32[n]) {
      for i in 0..n { y[i] = u8(i32(x[i])); z[i] = i32(x[i]); }
    }""")
    info = k.check(np.zeros(8, np.int8), np.zeros(8, np.uint8), np.zeros(8, np.int32))
    assert info["signature"].startswith("q(x: i8[8], out y: u8[8]")
    with pytest.raises(TypeError, match=r"argument 1 \(x\): expected i8\[8\] \(int8\), given NumPy array of uint8"):
        k.check(np.zeros(8, np.uint8), np.zeros(8, np.uint8), np.zeros(8, np.int32))
    with pytest.raises(TypeError, match=r"argument 2 \(out y\)"):
        k.check(np.zeros(8, np.int8), np.zeros(8, np.int16), np.zeros(8, np.int32))


def test_u32_arrays_are_uint32_and_scalars_in_range():
    k = rtcg.Kernel("""kernel h(n: int, s: u32, bin: i32[n], x: u32[n], inout c: u32[4]) {
      for i in 0..n { c[bin[i]] += x[i] * s; }
    }""")
    bins, x, c = np.zeros(8, np.int32), np.zeros(8, np.uint32), np.zeros(4, np.uint32)
    info = k.check(4294967295, bins, x, c)
    assert info["signature"].startswith("h(s: u32, bin: i32[8], x: u32[8], inout c: u32[4]")
    with pytest.raises(TypeError, match=r"argument 3 \(x\): expected u32\[8\] \(uint32\), given NumPy array of int32"):
        k.check(7, bins, np.zeros(8, np.int32), c)
    for bad in (-1, 2**32):
        with pytest.raises(ValueError, match="out of the range of u32"):
            k.check(bad, bins, x, c)
