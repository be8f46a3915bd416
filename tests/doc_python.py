"""The Python examples of README.md and docs/python.md run as written.

Usage: doc_python.py KGATE SOURCE_DIR [PYTHON]. Each ```python fence of the
two pages is written to a file of its own and run as a script by PYTHON
(default: this interpreter) with the build's kgate. A fence on the line
after `<!-- not run: WHY -->` is a fragment: it is compiled, not run.
Without a GPU (`kgate devices` fails) an example must stop at the GPU, with
kgate's "no usable CUDA GPU" error (exit 5, a KgateError in Python); with
one it must exit 0. Examples get torch tensors, so on a GPU every example
needs torch, and without one those that import it: where PYTHON has none
they are skipped, saying so. A Python example in an indented block (never
run) fails the test. Exit 77 when nothing ran (CTest: skipped)."""
import os
import re
import subprocess
import sys
import tempfile

PAGES = ("README.md", "docs/python.md")
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
FENCE = re.compile(r"^```(\w*)$")
# Python outside a fence: an import of kgate or a call of one of its functions
LOOSE = re.compile(r"^(?: {4}|\t)\s*(?:import kgate|from kgate |.*\bkgate\.\w+\()")
IMPORTS_TORCH = re.compile(r"^\s*(?:import|from)\s+torch\b|^\s*import\s.*\btorch\b", re.M)
NO_GPU = re.compile(r"^kgate\.api\.KgateError: kgate: no (?:usable )?CUDA GPU")


def examples(path):
    """(line, language, source, runs) of each fenced block of the page, and
    the lines of Python found outside a fence."""
    out, loose, lang, start, body, runs = [], [], None, 0, [], True
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if lang is None and m:
            lang, start, body = m.group(1), n, []
            runs = not (n > 1 and NOT_RUN.match(lines[n - 2]))
        elif lang is not None and line == "```":
            out.append((start, lang, "\n".join(body) + "\n", runs))
            lang = None
        elif lang is not None:
            body.append(line)
        elif LOOSE.match(line):
            loose.append(n)
    return out, loose


def run(src, python, kgate, root, gpu):
    """Runs one example; returns (ok, what happened)."""
    with tempfile.TemporaryDirectory(prefix="kgate-doc-") as d:
        script = os.path.join(d, "example.py")
        with open(script, "w") as f:
            f.write(src)
        env = dict(os.environ, KGATE_BIN=kgate, KGATE_PYTHON=python,
                   PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(root, "python"),
                                                            os.environ.get("PYTHONPATH")])))
        try:
            p = subprocess.run([python, script], capture_output=True, text=True, env=env, cwd=d,
                               timeout=900 if gpu else 120)
        except subprocess.TimeoutExpired:
            return False, "no end within the time limit"
    err = p.stderr.strip().splitlines()
    last = err[-1] if err else ""
    if gpu:
        return p.returncode == 0, f"exit {p.returncode}" + (f": {last}" if p.returncode else "")
    if p.returncode != 0 and NO_GPU.match(last):
        return True, "stopped at the GPU"
    return False, f"exit {p.returncode}, not the no-GPU error: {last or p.stdout.strip()[-300:]}"


def main(argv):
    kgate, root = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    python = argv[2] if len(argv) > 2 else sys.executable
    gpu = subprocess.run([kgate, "devices"], capture_output=True).returncode == 0
    torch = subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0
    passed = skipped = failed = 0
    for page in PAGES:
        blocks, loose = examples(os.path.join(root, page))
        for n in loose:
            print(f"FAIL: {page}:{n}: Python outside a ```python fence: fence it (it is then run) or mark it")
            failed += 1
        for n, lang, src, runs in blocks:
            where = f"{page}:{n}"
            if lang != "python":
                continue
            try:
                compile(src, where, "exec")
            except SyntaxError as e:
                print(f"FAIL: {where}: {e}")
                failed += 1
                continue
            if not runs:
                continue
            if not torch and (gpu or IMPORTS_TORCH.search(src)):
                print(f"skip: {where}: needs torch, which {python} lacks")
                skipped += 1
                continue
            ok, what = run(src, python, kgate, root, gpu)
            print(f"{'ok' if ok else 'FAIL'}: {where}: {what}")
            passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {skipped} skipped, {failed} failed ({'a GPU' if gpu else 'no GPU'})")
    if failed:
        return 1
    return 0 if passed else 77


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
