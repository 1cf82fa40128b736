#!/bin/sh
# Thin wrapper: run the foundation benchmark (watchpid, stopbounded vs
# pidwait, tail --pid, start-stop-daemon, flock, /bin/true) from the repo root.
# Usage: bench/foundation/run.sh [-n 200] [-slow 10] [-tail 5] [-only latency,stop,overshoot,startup] [-v]
# Exit: 0 every target met, 1 a target missed, 3 setup failed.
set -eu
cd "$(dirname "$0")/../.."
exec go run ./bench/foundation "$@"
