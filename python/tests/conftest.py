"""Shared fixtures: the example kernels and whether a GPU is here."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _private_state(tmp_path, monkeypatch):
    # Kernel cache and tuning database in a fresh directory per test, never the user's.
    monkeypatch.setenv("RTCG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RTCG_TUNING_DB", raising=False)
    monkeypatch.delenv("RTCG_TUNING", raising=False)


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def gpu_available() -> bool:
    import rtcg

    try:
        rtcg.Context(0)
        return True
    except rtcg.NoDeviceError:
        return False


requires_gpu = pytest.mark.skipif(os.environ.get("RTCG_FORCE_NO_GPU") == "1" or not gpu_available(),
                                  reason="needs a CUDA GPU")
