"""The compile-only functions, errors with structured diagnostics, size binding from shapes and
argument validation against NumPy arrays: everything that needs no GPU."""

import os
import pathlib

import numpy as np
import pytest

import rtcg
from conftest import example

AXPY = """kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
  for i in 0..n { y[i] = a * x[i] + y[i]; }
}"""

MATMUL = example("matmul.rtcg")
DG_DIFF = example("dg_diff.rtcg")


def test_version():
    assert rtcg.__version__.count(".") == 2


def test_emit_gives_cuda_c():
    cuda = rtcg.emit(AXPY, {"n": 1000})
    assert "__global__" in cuda and "axpy" in cuda
    assert "n = 1000" in cuda


def test_emit_matches_rtcgc(tmp_path):
    # The same pipeline as the command line: byte for byte the same CUDA C.
    import subprocess

    from rtcg._paths import tool

    rtcgc = tool("rtcgc") or os.environ.get("RTCGC")
    if rtcgc is None:
        pytest.skip("no rtcgc beside this package")
    f = tmp_path / "matmul.rtcg"
    f.write_text(MATMUL)
    cli = subprocess.run([rtcgc, "emit", str(f), "-D", "n=500"], capture_output=True, text=True, check=True).stdout
    assert rtcg.emit(MATMUL, {"n": 500}) == cli


def test_emit_with_schedule_and_kernel_name():
    schedule = "i: grid.y, thread.y 8; j: grid.x, thread.x 32; k: serial"
    cuda = rtcg.emit(MATMUL, {"n": 256}, schedule=schedule, kernel="matmul")
    assert "threadIdx.y" in cuda
    assert cuda != rtcg.emit(MATMUL, {"n": 256})


def test_emit_from_path():
    cuda = rtcg.emit(pathlib.Path(__file__).parents[2] / "examples" /
                     "dg_diff.rtcg", {"K": 100, "Np": 20})
    assert "dg_diff" in cuda


def test_check_without_sizes_lists_kernels():
    kernels = rtcg.check(DG_DIFF)
    assert [k["name"] for k in kernels] == ["dg_diff"]
    params = {p["name"]: p for p in kernels[0]["params"]}
    assert params["K"]["kind"] == "size"
    assert params["u"]["shape"] == ["K", "Np"]
    assert params["ur"]["mode"] == "out"


def test_check_with_sizes_binds_shapes():
    k = rtcg.check(DG_DIFF, {"K": 10, "Np": 4})
    params = {p["name"]: p for p in k["params"]}
    assert params["u"]["bound_shape"] == [10, 4]
    assert k["sizes"] == {"K": 10, "Np": 4}
    assert k["signature"].startswith("dg_diff(")


def test_explain_names_the_schedule():
    text = rtcg.explain(MATMUL, {"n": 64})
    assert text.startswith("kernel matmul (n=64) for sm_90, schedule:")
    assert "launch:" in text


def test_cubin_is_an_elf():
    data = rtcg.cubin(AXPY, {"n": 1000}, arch="sm_90")
    assert isinstance(data, bytes) and data[:4] == b"\x7fELF"
    assert ".version" in rtcg.ptx(AXPY, {"n": 1000})


def test_cubin_needs_a_real_architecture():
    with pytest.raises(rtcg.Error, match="real architecture"):
        rtcg.cubin(AXPY, {"n": 10}, arch="compute_90")
    with pytest.raises(rtcg.Error, match="arch"):
        rtcg.cubin(AXPY, {"n": 10}, arch="sm_1")


def test_syntax_error_has_structured_diagnostics():
    bad = "kernel k(n: int, out y: f32[n]) {\n  for i in 0..n { y[i] = ; }\n}\n"
    with pytest.raises(rtcg.CompileError) as info:
        rtcg.check(bad)
    e = info.value
    assert str(e).startswith("<string>:2:")
    assert "^" in str(e)  # the caret under the offending range
    d = e.diagnostics[0]
    assert (d.file, d.line, d.severity) == ("<string>", 2, "error")
    assert d.column > 0 and d.message
    assert e.errors == [x for x in e.diagnostics if x.severity == "error"]


def test_compile_error_file_name_and_several_errors():
    bad = "kernel k(n: int, out y: f32[n]) {\n  for i in 0..n { y[i] = q; z[i] = 1.0; }\n}\n"
    with pytest.raises(rtcg.CompileError) as info:
        rtcg.emit(bad, {"n": 4}, file_name="mine.rtcg")
    errors = info.value.errors
    assert len(errors) >= 2
    assert all(d.file == "mine.rtcg" and d.line == 2 for d in errors)
    assert str(errors[0]).startswith("mine.rtcg:2:")


def test_out_of_bounds_for_these_sizes():
    shifted = AXPY.replace("a * x[i]", "a * x[i + 1]")
    rtcg.check(shifted)  # well-formed
    with pytest.raises(rtcg.CompileError, match="out of bounds") as info:
        rtcg.check(shifted, {"n": 100})
    assert info.value.diagnostics[0].line == 2


def test_bad_sizes_and_schedule_raise_compile_error():
    with pytest.raises(rtcg.CompileError, match="n"):
        rtcg.emit(AXPY, {})
    with pytest.raises(rtcg.CompileError, match="m"):
        rtcg.emit(AXPY, {"n": 10, "m": 3})
    with pytest.raises(rtcg.CompileError):
        rtcg.emit(AXPY, {"n": 10}, schedule="i: bogus")


def test_overflowing_schedules_and_sizes_raise_compile_error():
    # Issue 40: factors whose product passes 2^64 killed the interpreter (SIGFPE in the planner);
    # a size product past i32 compiled to a kernel that stores 0.
    with pytest.raises(rtcg.CompileError, match="2\\^31 - 1 points"):
        rtcg.emit(MATMUL, {"n": 100},
                  schedule="i: grid.y, serial 2147483648, unroll 2147483648, reg 2147483648; j: grid.x; k: serial")
    nm = "kernel k(n: int, m: int, out y: f32[1]) { y[0] = sum(i in 0..n * m, 1.0f32); }"
    with pytest.raises(rtcg.CompileError, match="does not fit in i32"):
        rtcg.emit(nm, {"n": 46341, "m": 46341})
    assert "__global__" in rtcg.emit(nm, {"n": 46340, "m": 46340})


def test_compile_error_is_a_value_error_and_an_rtcg_error():
    with pytest.raises(ValueError):
        rtcg.check("kernel")
    with pytest.raises(rtcg.Error):
        rtcg.check("kernel")


def test_python_level_argument_errors():
    with pytest.raises(TypeError, match="sizes"):
        rtcg.emit(AXPY, [("n", 3)])
    with pytest.raises(TypeError, match="integer"):
        rtcg.emit(AXPY, {"n": 2.5})
    with pytest.raises(TypeError, match="integer"):
        rtcg.emit(AXPY, {"n": True})
    with pytest.raises(TypeError, match="source"):
        rtcg.emit(42, {"n": 3})
    with pytest.raises(ValueError, match="out of range"):
        rtcg.emit(AXPY, {"n": 2**70})
    assert rtcg.emit(AXPY, {"n": np.int64(8)}) == rtcg.emit(AXPY, {"n": 8})


F64_DOT = """kernel dot(n: int, x: f64[n], y: f64[n], out r: f64[1]) {
  for o in 0..1 { r[o] = sum(i in 0..n, x[i] * y[i]); }
}"""
SPMV = example("spmv.rtcg")
TF32_MMA = "mma: tf32 m16n8k8 warps 2x2 tile 2x2 k 8"


def test_precision_policies_reach_the_compiler():
    assert rtcg.emit(AXPY, {"n": 8}, precision="ieee") == rtcg.emit(AXPY, {"n": 8})
    # An mma schedule under the policy that allows it: tensor-core code, the same as rtcgc's.
    cuda = rtcg.emit(MATMUL, {"n": 100}, schedule=TF32_MMA, precision="tf32")
    assert "mma" in cuda and "rtcg_tf32_rna" in cuda
    x3 = rtcg.emit(MATMUL, {"n": 100}, schedule=TF32_MMA.replace("tf32", "tf32x3"), precision="tf32x3")
    assert "mma" in x3 and x3 != cuda
    with pytest.raises(rtcg.CompileError, match="precision 'tf32x3' does not allow"):
        rtcg.emit(MATMUL, {"n": 100}, schedule=TF32_MMA, precision="tf32x3")
    assert "mma" in rtcg.explain(MATMUL, {"n": 100}, schedule=TF32_MMA, precision="tf32")
    assert rtcg.ptx(MATMUL, {"n": 100}, schedule=TF32_MMA, precision="tf32").count("mma.sync") > 0
    # Not allowed by the default policy: refused with the option that allows it.
    for f in (rtcg.emit, rtcg.explain):
        with pytest.raises(rtcg.CompileError, match="tf32"):
            f(MATMUL, {"n": 100}, schedule=TF32_MMA)
    # A policy that cannot apply to the kernel: an error with the reason.
    with pytest.raises(rtcg.CompileError, match="f64"):
        rtcg.emit(F64_DOT, {"n": 100}, precision="tf32")
    with pytest.raises(ValueError, match="precision"):
        rtcg.emit(AXPY, {"n": 8}, precision="fast")
    with pytest.raises(ValueError, match="precision"):
        rtcg.Kernel(AXPY, precision="TF32")
    assert rtcg.Kernel(MATMUL, precision="tf32x3").name == "matmul"
    # The Ozaki policies: fp32x rewrites the f32 contraction (explain prints the steps), fp64x has
    # none to take in it.
    assert "precision fp32x: the f32 contractions are rewritten" in rtcg.explain(MATMUL, {"n": 640}, precision="fp32x")
    with pytest.raises(rtcg.CompileError, match="computes f64 contractions on INT8 tensor cores"):
        rtcg.emit(MATMUL, {"n": 40}, precision="fp64x")


def test_tune_checks_its_inputs_before_any_gpu_work(tmp_path):
    sizes = {"n": 4, "nnz": 6}
    rowptr = np.array([0, 1, 3, 3, 6], np.int32)
    # An output, an unknown array and a wrong element count: errors naming the array, whether or not
    # a GPU is present (the search never starts).
    with pytest.raises(rtcg.Error, match="'y' is not an in or inout array"):
        rtcg.tune(SPMV, sizes, inputs={"y": np.zeros(4, np.float32)}, progress=False, db="-")
    with pytest.raises(rtcg.Error, match="'nope' is not an in or inout array"):
        rtcg.tune(SPMV, sizes, inputs={"nope": rowptr}, progress=False, db="-")
    with pytest.raises(rtcg.Error, match="'rowptr' has 5 elements, the file holds 4"):
        rtcg.tune(SPMV, sizes, inputs={"rowptr": rowptr[:4]}, progress=False, db="-")
    bad = tmp_path / "rowptr.txt"
    bad.write_text("0 1 x 3 6\n")
    with pytest.raises(rtcg.Error, match="value 3 .'x'. is not an integer"):
        rtcg.tune(SPMV, sizes, inputs={"rowptr": bad}, progress=False, db="-")
    with pytest.raises(TypeError, match="dtype"):
        rtcg.tune(SPMV, sizes, inputs={"rowptr": np.array(["a"] * 5)}, progress=False, db="-")
    with pytest.raises(rtcg.Error, match="f64"):
        rtcg.tune(F64_DOT, {"n": 100}, precision="tf32", progress=False, db="-")


def test_input_arrays_are_written_in_rtcgcs_format(tmp_path):
    from rtcg._tune import _input_files

    files = _input_files({"rowptr": np.array([[0, 2], [5, 7]], np.int32), "val": np.float32([0.1, -3.0]),
                          "x": "given.txt"}, str(tmp_path))
    assert files["x"] == "given.txt"
    assert pathlib.Path(files["rowptr"]).read_text().split() == ["0", "2", "5", "7"]
    assert [np.float32(float(v)) for v in pathlib.Path(files["val"]).read_text().split()] == [np.float32(0.1), -3.0]


def test_several_kernels_need_a_name():
    two = AXPY + "\nkernel scale(n: int, out z: f32[n]) { for i in 0..n { z[i] = 2.0; } }\n"
    with pytest.raises(rtcg.CompileError, match="2 kernels"):
        rtcg.emit(two, {"n": 8})
    assert "scale" in rtcg.emit(two, {"n": 8}, kernel="scale")
    with pytest.raises(ValueError, match="choose one"):
        rtcg.Kernel(two)
    assert rtcg.Kernel(two, "scale").name == "scale"


def test_hostile_input_is_an_error_not_a_crash():
    for src in ["", "\x00\x01", "kernel " * 10000, "kernel k(" + "n: int, " * 3000 + ")", "é" * 1000]:
        with pytest.raises(rtcg.CompileError):
            rtcg.check(src, {"n": 1})
    with pytest.raises(rtcg.CompileError):
        rtcg.emit(AXPY, {"n": -5})
    with pytest.raises(rtcg.CompileError):
        rtcg.emit(AXPY, {"n": 2**40})


def test_every_native_signature_has_its_type_casters():
    """A nanobind function whose argument type has no caster included shows the C++ type name
    (std::...) in its signature and rejects every Python call at run time (the GPU launch once did,
    for a sequence of tuples); the signatures are readable without a GPU."""
    from rtcg import _rtcg

    def signatures(obj, seen):
        for name in dir(obj):
            if name.startswith("__"):
                continue
            value = getattr(obj, name)
            if isinstance(value, type) and value not in seen:
                seen.add(value)
                yield from signatures(value, seen)
            elif callable(value):
                yield f"{getattr(obj, '__name__', obj)}.{name}", value.__doc__ or ""

    found = list(signatures(_rtcg, set()))
    assert len(found) > 10
    raw = [(name, doc.splitlines()[0]) for name, doc in found if "std::" in doc]
    assert raw == []


def test_hostile_arguments_are_refused(tmp_path):
    """Issue 40, item 12: an arch that is a path, a negative shared-memory limit, a 100 MB source
    and a source path that is a device or a FIFO were accepted (or read until MemoryError)."""
    with pytest.raises(rtcg.Error, match="arch '../../etc'"):
        rtcg.explain(AXPY, {"n": 10}, arch="../../etc")
    with pytest.raises(rtcg.Error, match="arch"):
        rtcg.cubin(AXPY, {"n": 10}, arch="../../etc")
    for call in (rtcg.emit, rtcg.explain):
        with pytest.raises(ValueError, match="max_shared=-1"):
            call(AXPY, {"n": 10}, max_shared=-1)
    assert "__global__" in rtcg.emit(AXPY, {"n": 10}, max_shared=0)
    huge = AXPY + "\n" + "//" + "x" * (16 << 20) + "\n"
    with pytest.raises(ValueError, match="larger than 16 MiB"):
        rtcg.check(huge, {"n": 10})
    with pytest.raises(ValueError, match="character device, not a regular file"):
        rtcg.check(pathlib.Path("/dev/zero"))
    fifo = tmp_path / "fifo.rtcg"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        rtcg.emit(fifo, {"n": 10})
    big = tmp_path / "big.rtcg"
    big.write_bytes(AXPY.encode() + b"\n//" + b"x" * (16 << 20))
    with pytest.raises(ValueError, match="larger than 16 MiB"):
        rtcg.check(big)
    good = tmp_path / "axpy.rtcg"
    good.write_text(AXPY)
    assert rtcg.check(good, {"n": 10})["name"] == "axpy"


def _frame(body: dict, blob: bytes = b"") -> bytes:
    """A frame of the compile worker's protocol: "RTCG", u32 JSON bytes, u64 blob bytes, JSON, blob."""
    import json
    import struct

    text = json.dumps(body).encode()
    return b"RTCG" + struct.pack("<IQ", len(text), len(blob)) + text + blob


def _unframe(frame: bytes) -> tuple[dict, bytes]:
    import json
    import struct

    assert frame[:4] == b"RTCG"
    n, m = struct.unpack("<IQ", frame[4:16])
    assert len(frame) == 16 + n + m
    return json.loads(frame[16:16 + n]), frame[16 + n:]


def test_compile_slot_server_compiles_a_frame_and_refuses_garbage():
    """rtcg.tune's compile slots on another MPI rank (no MPI needed): a compile frame comes back as
    a cubin; a malformed frame as a failure with the reason; a slot it does not have is an error."""
    from rtcg._native import native

    server = native.CompileSlotServer(1)
    assert server.slots == 1
    source = 'extern "C" __global__ void k_0(float* x) { x[threadIdx.x] = 1.0f; }'
    reply, cubin = _unframe(server.compile(0, _frame({"type": "compile", "id": 7, "kernel": "k", "arch": "sm_90",
                                                      "source": source}), 60.0))
    assert reply["type"] == "compiled" and reply["id"] == 7 and reply["success"], reply
    assert cubin[:4] == b"\x7fELF"
    failed, _ = _unframe(server.compile(0, b"garbage", 60.0))
    assert failed["type"] == "failed" and "malformed compile request" in failed["reason"], failed
    assert server.compiled == 1
    with pytest.raises(IndexError):
        server.compile(1, b"", 1.0)
