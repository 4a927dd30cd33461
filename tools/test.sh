#!/usr/bin/env bash
# The tests: install build dependencies, build, run every meson test suite (the gpu suite skips
# with exit 77 where there is no GPU; the Python suites skip without pytest: tools/python-deps.sh),
# and print one closing line: N passed, N failed, N skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh || exit 1
if [ ! -f build/build.ninja ]; then
    meson setup build || exit 1
fi
ninja -C build || exit 1
# The pytest suites run with tools/python-deps.sh's venv when it exists (CI makes it), else skip.
venv_python=$(tools/python-deps.sh --where)
if [ -z "${FLASHCORE_TEST_PYTHON:-}" ] && [ -x "$venv_python" ]; then
    export FLASHCORE_TEST_PYTHON=$venv_python
fi
meson test -C build --print-errorlogs "$@"
status=$?
log=build/meson-logs/testlog.json
if [ -f "$log" ]; then
    python3 - "$log" <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    result = json.loads(line).get("result", "")
    key = "OK" if result in ("OK", "EXPECTEDFAIL") else "SKIP" if result == "SKIP" else "FAIL"
    counts[key] += 1
print(f"{counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
PY
fi
exit $status
