#!/bin/sh
# One command for the peer comparison: sets up the virtual environments on
# first use, builds the dualsim example, runs every engine and prints the
# table. Arguments go to run.py (see `bench/peers/run.sh --help`).
set -e
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
exec "$py" "$here/run.py" "$@"
