#!/usr/bin/env python3
"""Validates kgate JSON reports against docs/results.schema.json: the sample
the unit tests write, and every recorded run under results/h200/."""
import glob
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is missing: run scripts/deps.sh", file=sys.stderr)
    sys.exit(1)

schema_path, sample, recorded_dir = sys.argv[1:4]
schema = json.load(open(schema_path))
files = [sample] + sorted(glob.glob(os.path.join(recorded_dir, "**", "run-*.json"), recursive=True) +
                          glob.glob(os.path.join(recorded_dir, "**", "check-*.json"), recursive=True) +
                          glob.glob(os.path.join(recorded_dir, "**", "dc-*.json"), recursive=True))
bad = 0
for f in files:
    try:
        jsonschema.validate(json.load(open(f)), schema)
        print("ok:", f)
    except Exception as e:  # report every file, then fail
        print("FAIL:", f, str(e).splitlines()[0])
        bad += 1
print(f"{len(files) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
