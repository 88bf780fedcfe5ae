"""rtcg.tune under mpiexec (three ranks, mpi4py): rank 0 searches, the others compile and measure its
candidates, every rank returns rank 0's result, rank 0 alone writes the database. On the CPU: a stand-in device
($RTCG_TEST_DEVICE) measured by the tuner tests' fake worker, as tests/mpi/MpiTuneTest.cpp does."""

import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys

import pytest

mpi4py = pytest.importorskip("mpi4py")

SCRIPT = """
import json, sys
import rtcg
from mpi4py import MPI
source = "kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = alpha * x[i]; } }"
r = rtcg.tune(source, {"n": 100000}, max_candidates=12, time_limit=0, progress=False, db=sys.argv[1])
rank = MPI.COMM_WORLD.Get_rank()
# one file per rank: mpiexec forwards the ranks' stdout without keeping their lines apart
with open(f"{sys.argv[2]}/rank{rank}.json", "w") as f:
    json.dump({"rank": rank, "devices": r.devices, "candidates": len(r.candidates),
               "verified": r.counts["verified"], "schedule": r.schedule, "compiled_on": r.compiled_on}, f)
"""


def _fake_worker():
    """The tuner tests' fake worker of the build tree, or None for an installed package (a wheel has
    no build tree: rtcg._build_paths exists only in the package of a build)."""
    try:
        from rtcg import _build_paths
    except ImportError:
        return None
    return pathlib.Path(_build_paths.worker).parents[2] / "tests" / "tuner" / "rtcg_fake_worker"


def test_one_search_compiled_and_measured_on_every_rank(tmp_path):
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec")
    fake = _fake_worker()
    if fake is None:
        pytest.skip("an installed package: no build tree with the fake worker")
    if not fake.exists():
        pytest.skip(f"no fake worker at {fake}")
    script = tmp_path / "tune.py"
    script.write_text(SCRIPT)
    db = tmp_path / "tuning.sqlite"
    env = dict(os.environ, RTCG_TEST_DEVICE="Fake GPU,sm_90,132", RTCG_FAKE_WORKER_MODE="verified",
               RTCG_FAKE_WORKER_DELAY_MS="20", RTCG_WORKER=str(fake))
    p = subprocess.run([mpiexec, "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-n", "3",
                        sys.executable, str(script), str(db), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    results = [json.loads(f.read_text()) for f in sorted(tmp_path.glob("rank*.json"))]
    assert sorted(r["rank"] for r in results) == [0, 1, 2], p.stdout + p.stderr
    first = results[0]
    for r in results:  # every rank returns rank 0's result
        assert {k: v for k, v in r.items() if k != "rank"} == {k: v for k, v in first.items() if k != "rank"}
    assert first["devices"] == 3
    assert first["candidates"] > 1 and first["verified"] == first["candidates"]
    # Compiled on every rank: rank 0's pool had its own workers and the other ranks' slots (each
    # took a candidate as the pool started), and counts every candidate once.
    on = {h["host"]: h for h in first["compiled_on"]}
    assert set(on) == {"local", "rank 1", "rank 2"}, first["compiled_on"]
    assert all(h["slots"] >= 1 for h in on.values()), first["compiled_on"]
    assert on["rank 1"]["compiled"] >= 1 and on["rank 2"]["compiled"] >= 1, first["compiled_on"]
    assert sum(h["compiled"] for h in on.values()) == first["candidates"], first["compiled_on"]
    with sqlite3.connect(db) as c:  # rank 0 recorded every candidate, once
        assert c.execute("SELECT count(*) FROM candidates").fetchone()[0] == first["candidates"]
