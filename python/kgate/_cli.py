"""The `kgate` command that `pip install` makes ([project.scripts]): runs the
kgate executable (kgate.find_kgate: $KGATE_BIN, the installed tree beside
this package, or PATH) with the same arguments, so its exit code is kgate's.
Without one it says how to get it, in one line, and exits 5 (environment)."""
import os
import sys

from .api import KgateError, find_kgate


def main():
    try:
        exe = find_kgate()
    except KgateError as e:
        sys.stderr.write(f"{e}\n")
        return e.code
    try:
        os.execv(exe, [exe] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write(f"kgate: cannot run {exe}: {e.strerror}\n")
    return 5
