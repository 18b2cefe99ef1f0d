# Counting helpers of make test and make check (scripts/test.sh, scripts/check.sh): each
# adds what one suite reports to the caller's passed and failed. $PY is the project's venv
# Python (scripts/venv.sh).

# "passed failed" of a pytest JUnit report, one count per test case; a missing or
# unreadable report counts as one failure (pytest crashed or ran nothing). A case that
# was skipped or expected to fail (xfail: <skipped type="pytest.xfail">, in pytest 7 and 9)
# is a failure too: it proves nothing, and a known bug marked so would keep the run green.
# An xfail that passes is a failure already (test/pytest.ini, test/lib/strictoutcomes.py).
# Each such case is named on stderr.
junit_counts() {
  "$PY" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 1"); sys.exit()
passed = failed = 0
for case in root.iter("testcase"):
    name = f"{case.get('classname')}::{case.get('name')}"
    if case.find("failure") is not None or case.find("error") is not None:
        failed += 1
    elif (skip := case.find("skipped")) is not None:
        failed += 1
        kind = "xfail" if skip.get("type") == "pytest.xfail" else "skipped"
        print(f"{kind} counts as a failure: {name}: {skip.get('message', '')}", file=sys.stderr)
    else:
        passed += 1
print(passed, failed if passed + failed else 1)
PY
}

# cmocka_run BINARY: runs one cmocka program and adds its counts to passed/failed.
cmocka_run() {
  local t=$1 out rc ok bad
  out=$("$t" 2>&1)
  rc=$?
  ok=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
  bad=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n 1)
  ok=${ok:-0}
  bad=${bad:-0}
  if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
    bad=1  # crashed or a sanitizer stopped it before cmocka could count
  fi
  passed=$((passed + ok))
  failed=$((failed + bad))
  printf '%-28s %3d passed, %d failed\n' "${t#build/asan/}" "$ok" "$bad"
  [ "$bad" -eq 0 ] || printf '%s\n' "$out" | tail -n 40
}

# step_run LABEL COMMAND...: one check that is a command (its output shown as it comes),
# counted as one test: passed if it exits 0, failed otherwise.
step_run() {
  local label=$1 ok=1 bad=0
  shift
  "$@" || { ok=0; bad=1; }
  passed=$((passed + ok))
  failed=$((failed + bad))
  printf '%-28s %3d passed, %d failed\n' "$label" "$ok" "$bad"
}

# unit_tests_run BUILD: every cmocka unit test of test/unit, from BUILD/test. One binary per
# test source: a binary left in BUILD by a test that was renamed or removed must not count.
unit_tests_run() {
  local src t
  for src in test/unit/*/test_*.c; do
    t=${src#test/unit/}
    t=$1/test/${t%.c}
    if [ -x "$t" ]; then cmocka_run "$t"; else warn "$t was not built from $src"; failed=$((failed + 1)); fi
  done
}

# suite_start: what every suite does first: installs the missing packages, sets up the
# test Python (PY: the project's venv, never the first python3 on PATH), and sets jobs (the
# cores, for make -j), started_at, passed and failed, and the sanitizers' options.
suite_start() {
  started_at=$(date +%s)
  bash scripts/install-deps.sh || die "installing dependencies failed"
  PY=$(bash scripts/venv.sh) || die "setting up the test Python (scripts/venv.sh) failed"
  jobs=$(nproc 2>/dev/null || echo 2)
  passed=0
  failed=0
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
}

# junit_add REPORT LABEL: adds a pytest JUnit report's counts to passed and failed, and
# prints them on one line under LABEL.
junit_add() {
  local counts
  counts=$(junit_counts "$1")
  passed=$((passed + ${counts% *}))
  failed=$((failed + ${counts#* }))
  printf '%-28s %3d passed, %d failed\n' "$2" "${counts% *}" "${counts#* }"
}

# suite_end TARGET: the time it took and the one line "N passed, N failed"; fails unless
# something passed and nothing failed.
suite_end() {
  echo "make $1 took $(( $(date +%s) - started_at )) s"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}
