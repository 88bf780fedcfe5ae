"""Raw CUDA modules from Python (rtcg.SourceModule, rtcg.tune_source). Without a GPU: the argument
conversion and checks that run before the native layer. With one (skipped otherwise): compile,
launch on PyTorch or CuPy arrays in place, a wrong argument rejected before the launch, NVRTC's
errors at the user's line, and a search over macro values with a reference and a check."""

import struct

import numpy as np
import pytest

import rtcg
from conftest import EXAMPLES, requires_gpu
from rtcg import _raw

SAXPY_PARAMS = [
    {"name": "n", "type": "int", "size": 4, "pointer": False},
    {"name": "a", "type": "float", "size": 4, "pointer": False},
    {"name": "x", "type": "const float*", "size": 8, "pointer": True},
    {"name": "y", "type": "float*", "size": 8, "pointer": True},
]


def test_python_numbers_take_the_declared_parameter_type():
    tuples, arrays = _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [1000, 2])
    assert arrays == []
    assert tuples[0] == ("bytes", struct.pack("<i", 1000), 0, "int 1000")
    assert tuples[1] == ("bytes", struct.pack("<f", 2.0), 0, "float 2.0")  # an int for a float parameter
    sized = [{"name": "", "type": "", "size": 8, "pointer": False}]
    assert _raw.raw_arg_tuples("k", sized, [7])[0][0][1] == struct.pack("<q", 7)
    assert _raw.raw_arg_tuples("k", sized, [0.5])[0][0][1] == struct.pack("<d", 0.5)
    unsigned = [{"name": "m", "type": "unsigned int", "size": 4, "pointer": False}]
    assert _raw.raw_arg_tuples("k", unsigned, [2**32 - 1])[0][0][1] == struct.pack("<I", 2**32 - 1)


def test_numpy_scalars_pass_their_own_bytes():
    tuples, _ = _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [np.int32(5), np.float64(2.5)])
    assert tuples[0] == ("bytes", np.int32(5).tobytes(), 0, "numpy.int32 5")
    assert tuples[1][1] == np.float64(2.5).tobytes()  # 8 bytes: the native check refuses it by size


def test_wrong_python_arguments_name_the_parameter():
    with pytest.raises(TypeError, match=r"saxpy: argument 3 is 5, but parameter 3 'x' \(const float\*\) is a pointer"):
        _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [1, 2.0, 5, 6])
    with pytest.raises(TypeError, match=r"argument 1 is the float 1.5, but parameter 1 'n' is int"):
        _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [1.5])
    with pytest.raises(ValueError, match="does not fit the parameter"):
        _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [2**40])
    with pytest.raises(TypeError, match="in host memory: raw kernels take device arrays"):
        _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, [1, 2.0, np.zeros(4, np.float32)])
    with pytest.raises(TypeError, match="argument 1 is a str"):
        _raw.raw_arg_tuples("saxpy", SAXPY_PARAMS, ["1"])


def test_launch_dimensions():
    assert _raw._dims(4, "grid") == (4, 1, 1)
    assert _raw._dims((4, 2), "grid") == (4, 2, 1)
    with pytest.raises(ValueError):
        _raw._dims((0,), "grid")
    with pytest.raises(ValueError):
        _raw._dims((1, 2, 3, 4), "block")
    with pytest.raises(TypeError):
        _raw._dims("x", "block")


AXPY = (EXAMPLES / "cuda" / "axpy_tiled.cu").read_text()


def device_arrays(n):
    """x, y on the GPU (PyTorch, else CuPy), and a function that reads one back as NumPy."""
    try:
        import torch

        if torch.cuda.is_available():
            x = torch.linspace(-3, 3, n, device="cuda", dtype=torch.float32)
            y = torch.ones(n, device="cuda", dtype=torch.float32)
            return x, y, lambda a: a.cpu().numpy(), torch.cuda.synchronize
    except ImportError:
        pass
    cupy = pytest.importorskip("cupy")
    x = cupy.linspace(-3, 3, n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    return x, y, cupy.asnumpy, cupy.cuda.Device().synchronize


@requires_gpu
def test_source_module_launches_in_place_and_rejects_wrong_arguments():
    n = 100003
    x, y, host, sync = device_arrays(n)
    mod = rtcg.SourceModule(AXPY, ["-DTILE=4"], file_name="axpy_tiled.cu")
    assert mod.function_names == ["axpy_tiled", "axpy_reference"]
    f = mod.get_function("axpy_tiled")
    assert [p["name"] for p in f.parameters] == ["n", "a", "x", "y"]
    f(n, 2.0, x, y, grid=((n + 4 * 256 - 1) // (4 * 256),), block=(256,))
    sync()
    expected = 2 * host(x) + 1
    np.testing.assert_array_equal(host(y), expected)
    # Rejected before anything runs: y keeps its values.
    with pytest.raises(rtcg.Error, match=r"'axpy_tiled': argument 2 for parameter 2 'a' \(float\) is numpy.float64 2.0"):
        f(n, np.float64(2.0), x, y, grid=(1,), block=(256,))
    with pytest.raises(rtcg.Error, match=r"takes 4 parameters .* but 3 arguments were given"):
        f(n, 2.0, x, grid=(1,), block=(256,))
    sync()
    np.testing.assert_array_equal(host(y), expected)
    with pytest.raises(rtcg.Error, match="has no __global__ function 'axpy'"):
        mod.get_function("axpy")


@requires_gpu
def test_nvrtc_errors_point_at_the_users_line():
    with pytest.raises(rtcg.CompileError) as e:
        rtcg.SourceModule('extern "C" __global__ void k(float* x) {\n  x[0] = nope;\n}\n', file_name="mine.cu")
    d = e.value.diagnostics[0]
    assert (d.file, d.line, d.column, d.severity) == ("mine.cu", 2, 10, "error")
    assert "mine.cu:2:10: error: identifier \"nope\" is undefined" in str(e.value)


@requires_gpu
def test_tune_source_over_macro_values(tmp_path):
    n = 100003
    x, y, host, sync = device_arrays(n)
    ref = rtcg.SourceModule(AXPY, file_name="axpy_tiled.cu").get_function("axpy_reference")
    db = str(tmp_path / "tuning.sqlite")

    def geometry(v):
        per_block = int(v["TILE"]) * int(v["BLOCK"])
        return ((n + per_block - 1) // per_block,), (int(v["BLOCK"]),)

    kwargs = dict(geometry=geometry, reference=ref, reference_grid=((n + 255) // 256,), reference_block=(256,),
                  outputs=[3], poison_outputs=False, file_name="axpy_tiled.cu", db=db, repeats=5)
    space = {"TILE": [1, 2, 4], "BLOCK": [128, 256]}
    r = rtcg.tune_source(AXPY, "axpy_tiled", space, (n, 2.0, x, y), **kwargs)
    assert len(r.candidates) == 6 and not r.from_database
    assert all(c["status"] == "verified" for c in r.candidates), r.candidates
    assert r.best is not None and r.best["median_ms"] > 0
    assert r.best_options == [f"-DTILE={r.variant['TILE']}", f"-DBLOCK={r.variant['BLOCK']}"]
    again = rtcg.tune_source(AXPY, "axpy_tiled", space, (n, 2.0, x, y), **kwargs)
    assert again.from_database and again.best["text"] == r.best["text"]

    # A check that refuses one variant; a variant of the wrong geometry fails the reference.
    def check(v):
        return None if v["TILE"] != "2" else "refused by the check"

    def short_geometry(v):
        return ((n // (int(v["TILE"]) * 256)) // 2,), (256,)  # half the blocks: elements left unwritten

    checked = rtcg.tune_source(AXPY, "axpy_tiled", {"TILE": [1, 2]}, (n, 2.0, x, y), geometry=geometry_256(n),
                               check=check, db="-", repeats=3)
    assert [c["status"] for c in checked.candidates] == ["verified", "wrong-result"]
    assert checked.candidates[1]["reason"] == "refused by the check"
    short = rtcg.tune_source(AXPY, "axpy_tiled", {"TILE": [1]}, (n, 2.0, x, y), geometry=short_geometry,
                             reference=ref, reference_grid=((n + 255) // 256,), reference_block=(256,), outputs=[3],
                             poison_outputs=False, db="-")
    assert short.candidates[0]["status"] == "wrong-result" and short.best is None


def geometry_256(n):
    return lambda v: (((n + int(v["TILE"]) * 256 - 1) // (int(v["TILE"]) * 256),), (256,))
