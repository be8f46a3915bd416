"""The Python package's verdict and exit tables against their one source:
the verdicts and their exit codes of libkgate (judge/verdict.h, read through
ctypes from KGATE_LIB) and the exit codes of docs/cli.md's table."""
import ctypes
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from kgate import api, kernelbench  # noqa: E402


def c_verdicts():
    lib = ctypes.CDLL(os.environ["KGATE_LIB"])
    lib.kg_verdict_name.restype = ctypes.c_char_p
    lib.kg_verdict_name.argtypes = [ctypes.c_int]
    lib.kg_verdict_exit_code.argtypes = [ctypes.c_int]
    out, i = {}, 0
    while (name := lib.kg_verdict_name(i).decode()) != "?":
        out[name] = lib.kg_verdict_exit_code(i)
        i += 1
    return out


def doc_exit_codes():
    text = open(os.path.join(HERE, "..", "..", "docs", "cli.md"), encoding="utf-8").read()
    table = text.split("## Exit codes", 1)[1]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)}


class Tables(unittest.TestCase):
    def test_verdicts(self):
        self.assertEqual(set(api.VERDICTS), set(c_verdicts()))

    def test_verdict_exit_codes(self):
        for name, code in c_verdicts().items():
            self.assertEqual(kernelbench._VERDICT_EXIT.get(name, 2), code, name)

    def test_exit_codes(self):
        self.assertEqual(set(api.EXIT), doc_exit_codes())


if __name__ == "__main__":
    unittest.main()
