"""`kgate kernelbench PROBLEMS/ SOLUTIONS/` reports as it goes (issue 34's
measurement; run on the GPU machine by scripts/gpu.sh kb-stream): each line
it writes on stderr with its time from the start, then SIGTERM at --stop
seconds, and what the --json file holds after: valid JSON, how many results,
its `incomplete` mark, and the exit code (7 when stopped).

    python3 scripts/kb_stream.py --kgate BUILD/kgate --problems DIR --solutions DIR --out OUT [--stop 60] [-- ARGS]

ARGS go to `kgate kernelbench` (for example --no-serve)."""
import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kgate", required=True)
    ap.add_argument("--problems", required=True)
    ap.add_argument("--solutions", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stop", type=float, default=60, help="SIGTERM after this many seconds")
    ap.add_argument("extra", nargs="*", help="more arguments for kgate kernelbench (after --)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    js = os.path.join(a.out, "kb-stream-results.json")
    cmd = [a.kgate, "kernelbench", a.problems, a.solutions, "--json", js, *a.extra]
    doc = {"command": "python3 scripts/kb_stream.py " + " ".join(sys.argv[1:]), "kgate_command": " ".join(cmd),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "lines": []}
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")

    def read(stream, name):
        for line in stream:
            doc["lines"].append({"t_s": round(time.time() - t0, 2), "stream": name, "line": line.rstrip()[:300]})

    readers = [threading.Thread(target=read, args=(p.stderr, "stderr")),
               threading.Thread(target=read, args=(p.stdout, "stdout"))]
    for r in readers:
        r.start()
    try:
        p.wait(timeout=a.stop)
        doc["stopped"] = False
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        doc["stopped"], doc["sigterm_at_s"] = True, round(time.time() - t0, 2)
        p.wait(timeout=120)
    for r in readers:
        r.join()
    doc["exit"], doc["wall_s"] = p.returncode, round(time.time() - t0, 2)
    progress = [x for x in doc["lines"] if x["stream"] == "stderr" and "kgate kernelbench: [" in x["line"]]
    ended = [x for x in progress if not x["line"].endswith("): started")]  # a problem's end, not its start
    doc["first_started_s"] = progress[0]["t_s"] if progress else None
    doc["first_result_s"] = ended[0]["t_s"] if ended else None
    try:
        res = json.load(open(js))
        doc["json_valid"] = True
        doc["json_results"] = len(res.get("results", []))
        doc["json_errors"] = len(res.get("errors", []))
        doc["json_incomplete"] = res.get("incomplete")
    except (OSError, ValueError) as e:
        doc["json_valid"], doc["json_error"] = False, str(e)
    with open(os.path.join(a.out, "kb-stream.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps({k: v for k, v in doc.items() if k != "lines"}, indent=1))


if __name__ == "__main__":
    main()
