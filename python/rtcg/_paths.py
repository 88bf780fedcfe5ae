"""Where the package's tools are: rtcg/bin of an installed package, or the build tree's tools for
the in-tree module (_build_paths.py, written by python/CMakeLists.txt)."""

from __future__ import annotations

import os

_here = os.path.dirname(os.path.abspath(__file__))


def tool(name: str) -> str | None:
    installed = os.path.join(_here, "bin", name)
    if os.access(installed, os.X_OK):
        return installed
    try:
        from . import _build_paths
    except ImportError:
        return None
    path = getattr(_build_paths, "worker" if name == "rtcg-worker" else name.replace("-", "_"), None)
    return path if path and os.access(path, os.X_OK) else None


def setup_worker() -> None:
    """Points the tuner at the rtcg-worker of this package (RTCG_WORKER, which the C++ library reads),
    unless the environment names one already."""
    if os.environ.get("RTCG_WORKER"):
        return
    worker = tool("rtcg-worker")
    if worker:
        os.environ["RTCG_WORKER"] = worker
