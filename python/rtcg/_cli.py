"""The ``rtcgc`` command of an installed package: runs the rtcgc installed with it (rtcg/bin)."""

import os
import sys

from ._paths import tool


def rtcgc() -> None:
    path = tool("rtcgc")
    if path is None:
        sys.exit("rtcg: rtcgc is not installed with this package")
    os.execv(path, [path, *sys.argv[1:]])
