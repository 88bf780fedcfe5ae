"""The exceptions of the rtcg package and the diagnostics they carry."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """One compiler diagnostic: where (1-based line and column; 0 when it has no location), how bad
    ("error", "warning" or "note") and what. ``length`` characters are underlined in the rendering."""

    file: str
    line: int
    column: int
    severity: str
    message: str
    length: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message}"


class Error(RuntimeError):
    """An error rtcg reports: bad schedules, arguments, a search that cannot run, NVRTC failing on
    generated code (a bug in rtcg, with NVRTC's log)."""


class CompileError(Error, ValueError):
    """Bad DSL source, sizes or schedule. ``str(e)`` is the rendered diagnostics, as rtcgc prints
    them (file:line:col, the source line, a caret); ``e.diagnostics`` are the same as records."""

    def __init__(self, message: str, diagnostics=()):
        super().__init__(message)
        self.diagnostics: list[Diagnostic] = list(diagnostics)

    def __str__(self) -> str:
        return self.args[0] if self.args else ""

    @property
    def errors(self) -> list[Diagnostic]:
        """The diagnostics of severity "error"."""
        return [d for d in self.diagnostics if d.severity == "error"]


class NoDeviceError(Error):
    """No CUDA driver or no CUDA device on this machine (the compile-only functions still work)."""
