"""A progress display for searches: one updating line on a terminal (fitted to its width), an
updating text cell in a Jupyter notebook, occasional plain lines in a log file."""

from __future__ import annotations

import shutil
import sys
import time


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def format_progress(candidates, measured, verified, elapsed, time_limit, best_ms) -> str:
    best = f"best {best_ms:.4f} ms" if best_ms > 0 else "best -"
    limit = f"/{time_limit:.0f}" if time_limit > 0 else ""
    return f"{measured}/{candidates} measured, {verified} verified, {best} [{elapsed:.0f}{limit} s]"


class ProgressDisplay:
    """Callable with a search's progress (candidates, measured, verified, elapsed s, time limit s,
    best ms); ``close()`` ends the display."""

    def __init__(self, title: str = "tuning", stream=None):
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self._notebook = stream is None and _in_notebook()
        self._tty = not self._notebook and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._handle = None
        self._last_plain = 0.0
        self._open = False
        self.last = ""

    def __call__(self, candidates, measured, verified, elapsed, time_limit, best_ms) -> None:
        line = f"{self.title}: {format_progress(candidates, measured, verified, elapsed, time_limit, best_ms)}"
        self.last = line
        self._open = True
        if self._notebook:
            from IPython.display import display

            if self._handle is None:
                self._handle = display({"text/plain": line}, raw=True, display_id=True)
            else:
                self._handle.update({"text/plain": line}, raw=True)
        elif self._tty:
            width = shutil.get_terminal_size((80, 24)).columns - 1
            self.stream.write("\r\033[K" + (line if len(line) <= width else line[: max(width - 3, 0)] + "..."))
            self.stream.flush()
        else:
            now = time.monotonic()
            if now - self._last_plain >= 10 or measured == candidates:
                self._last_plain = now
                self.stream.write(line + "\n")
                self.stream.flush()

    def close(self) -> None:
        if self._tty and self._open:
            self.stream.write("\r\033[K" + self.last + "\n")
            self.stream.flush()
        self._open = False
