#!/usr/bin/env bash
# The unit suite under AddressSanitizer + UndefinedBehaviorSanitizer, and a
# short run of every libFuzzer target on its seed corpus (tests/fuzz), in a
# clang build of its own (build-san/; the Release build in build/ is not
# touched). FUZZ_SECONDS (default 20) per target. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
CC=clang-19 CXX=clang++-19 cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRUSTFS_SANITIZE=ON -DRUSTFS_FUZZ=ON >/dev/null
ninja -C build-san -j"$(nproc)" unit_tests fuzzers
echo "== unit tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-san --output-on-failure -j2 -E preload_passthrough  # the shim is tested in build/
# A fuzzer that finds a crash prints its report (the last lines of its log,
# where the sanitizer's stack trace is) and leaves the input that crashed it
# in build-san/fuzz-crashes/<target>/, to replay with
# `build-san/bin/<target> FILE` and to keep as a seed once fixed.
for f in fuzz_frame fuzz_requests fuzz_config; do
  echo "== fuzz: $f for ${seconds}s"
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$f/." "$work/"  # new inputs go to the copy, not the repo
  log=$(mktemp)  # outside the corpus folder, which the fuzzer reads
  rc=0
  (cd "$work" && "$OLDPWD/build-san/bin/$f" -max_total_time="$seconds" -rss_limit_mb=2048 \
      -print_final_stats=1 . > "$log" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 80 "$log"
    kept="build-san/fuzz-crashes/$f"
    mkdir -p "$kept"
    for c in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      [ -e "$c" ] || continue
      cp "$c" "$kept/" && echo "kept $kept/$(basename "$c")"
    done
    rm -rf "$work" "$log"
    echo "fuzz: $f failed (exit $rc)"
    exit "$rc"
  fi
  tail -n 4 "$log"
  rm -rf "$work" "$log"
done
