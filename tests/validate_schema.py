#!/usr/bin/env python3
"""Validates kgate JSON reports against docs/results.schema.json: the sample
the unit tests write, then each further file, and the recorded runs
(run-*, check-*, dc-*.json) under each further folder.

    validate_schema.py SCHEMA SAMPLE [FILE|FOLDER]..."""
import glob
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is missing: run scripts/deps.sh", file=sys.stderr)
    sys.exit(1)

schema_path, sample = sys.argv[1:3]
schema = json.load(open(schema_path))
files = [sample]
for arg in sys.argv[3:]:
    if not os.path.isdir(arg):
        files.append(arg)
        continue
    files += sorted(f for pattern in ("run-*.json", "check-*.json", "dc-*.json")
                    for f in glob.glob(os.path.join(arg, "**", pattern), recursive=True))
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
