#!/bin/bash
# durations.sh [TAP]: each bats file's wall time in seconds (setup_file
# included) from a full run's TAP (build/integration.tap: run-queue.sh
# writes "# duration FILE SECONDS" after each file), longest first, in the
# form run.sh orders its queue by:
#   tests/integration/durations.sh > tests/integration/durations.txt
set -euo pipefail
awk '$1 == "#" && $2 == "duration" && NF == 4 { print $3, $4 }' "${1:-build/integration.tap}" | sort -k2,2nr
