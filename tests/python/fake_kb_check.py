#!/usr/bin/env python3
"""Stands in for the `kgate check` that `kgate kernelbench` runs on a
candidate file it wrote (KGATE_BIN; test_frontend.py's KernelbenchAsItGoes).
Judges the file's solutions one at a time, KG_FAKE_SLEEP s each (default
0): SLOW when the solution's name has "slow", else OK; rewrites its --json
after each, as kgate check does. Logs "start PID CANDIDATE" to KG_FAKE_LOG;
asked to stop (SIGINT, SIGTERM) it logs "stop PID SIGNAL", writes what it
judged, the solution then running as SKIPPED, and exits 7. With
KG_FAKE_DEAF it ignores SIGTERM (and is killed after its grace). With
KG_FAKE_ARGS its arguments go there as a JSON list.

As `kgate serve --socket PATH` it listens there, says so as kgate serve
does and waits for SIGTERM (exit 7); with KG_FAKE_NO_SERVE it refuses,
exit 5. KG_FAKE_SERVE_LOG gets "serve PID ARGS..." and "serve-stop PID
SIGNAL", and "check --server SOCK" for each check given one."""
import ast
import json
import os
import signal
import socket
import sys
import time


def solutions(cand):
    with open(cand) as f:
        call = next(n for n in ast.walk(ast.parse(f.read())) if isinstance(n, ast.Call))
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    return list(zip(ast.literal_eval(call.args[1]), kw["names"]))


def write(path, results, incomplete=None):
    doc = {"schema": "kgate.results/2", "device": {"name": "fake"}, "results": results}
    if incomplete:
        doc["incomplete"] = incomplete
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def log(line):
    if os.environ.get("KG_FAKE_LOG"):
        with open(os.environ["KG_FAKE_LOG"], "a") as f:
            f.write(line + "\n")


def slog(line):
    if os.environ.get("KG_FAKE_SERVE_LOG"):
        with open(os.environ["KG_FAKE_SERVE_LOG"], "a") as f:
            f.write(line + "\n")


def serve(argv):
    if os.environ.get("KG_FAKE_NO_SERVE"):
        sys.stderr.write("kgate: serve: no GPU here (fake)\n")
        return 5
    path = argv[argv.index("--socket") + 1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)

    def stop(sig, _frame):
        slog(f"serve-stop {os.getpid()} {signal.Signals(sig).name}")
        os._exit(7)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    slog(f"serve {os.getpid()} {' '.join(argv[1:])}")
    sys.stderr.write(f"kgate: serve: listening on {path} (GPU 0)\n")
    sys.stderr.flush()
    while True:
        signal.pause()


def main(argv):
    if os.environ.get("KG_FAKE_ARGS"):  # the arguments kgate kernelbench gave its check
        with open(os.environ["KG_FAKE_ARGS"], "w") as f:
            json.dump(argv, f)
    if argv[0] == "serve":
        return serve(argv)
    if "--server" in argv:
        slog(f"check --server {argv[argv.index('--server') + 1]}")
    if argv[0] != "check":
        sys.stderr.write("fake_kb_check: not a check\n")
        return 3
    cand, out = argv[1], argv[argv.index("--json") + 1]
    results, now = [], {}

    def stop(sig, _frame):
        log(f"stop {os.getpid()} {signal.Signals(sig).name}")
        if now:
            results.append({"kernel": now["name"], "verdict": "SKIPPED", "summaries": {}})
        write(out, results)
        sys.stderr.write(f"kgate: stopped by {signal.strsignal(sig)}: the job running then was abandoned\n")
        os._exit(7)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if os.environ.get("KG_FAKE_DEAF") else stop)
    log(f"start {os.getpid()} {cand}")
    for path, name in solutions(cand):
        now["name"] = name
        time.sleep(float(os.environ.get("KG_FAKE_SLEEP", "0")))
        results.append({"kernel": name, "verdict": "SLOW" if "slow" in os.path.basename(path) else "OK",
                        "summaries": {}})
        write(out, results, "in progress")
    now.clear()
    write(out, results)
    return 1 if any(r["verdict"] == "SLOW" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
