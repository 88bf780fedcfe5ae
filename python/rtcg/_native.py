"""Loads the extension module rtcg._rtcg with an error that says how to build it."""

try:
    from . import _rtcg as native  # noqa: F401
except ImportError as e:  # pragma: no cover - a broken installation
    raise ImportError(
        "rtcg: the extension module rtcg._rtcg is missing or cannot be loaded "
        f"({e}); install the package with `pip install .` from the repository, or build it in the "
        "tree (scripts/build.sh after scripts/setup.sh) and put build/python on PYTHONPATH"
    ) from e
