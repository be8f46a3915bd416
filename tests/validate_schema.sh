#!/bin/sh
# Runs validate_schema.py with the python3 that has Debian's python3-jsonschema.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/validate_schema.py" "$@"
