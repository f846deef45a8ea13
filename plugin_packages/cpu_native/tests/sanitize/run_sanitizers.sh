#!/usr/bin/env bash
# Build pool_stress.c with the kernels and run it under ThreadSanitizer, AddressSanitizer (and
# its leak check) and valgrind's memcheck. Run by hand (not in CI): it needs gcc's sanitizer
# runtimes and valgrind, and takes a few minutes.
#
#   bash plugin_packages/cpu_native/tests/sanitize/run_sanitizers.sh [tsan|asan|valgrind ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here/../../src/mini_infer_cpu_native"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
sources=("$here/pool_stress.c" "$src/_abi.c" "$src/_kernels.c" "$src/_winograd.c"
         "$src/_gemm.c" "$src/_pool.c" "$src/_act.c")
# one copy of each kernel (MI_NO_CLONES): the loader would run the copies' resolvers before
# the sanitizer's runtime is ready
flags=(-std=c11 -O1 -g -fno-omit-frame-pointer -pthread -DMI_NO_CLONES)
status=0
for tool in "${@:-tsan asan valgrind}"; do
  for t in $tool; do
    case "$t" in
      tsan) gcc "${flags[@]}" -fsanitize=thread "${sources[@]}" -o "$out/tsan" -lm
            echo "== ThreadSanitizer"
            TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$out/tsan" || status=1 ;;
      asan) gcc "${flags[@]}" -fsanitize=address,undefined "${sources[@]}" -o "$out/asan" -lm
            echo "== AddressSanitizer + LeakSanitizer + UBSan"
            ASAN_OPTIONS="detect_leaks=1:halt_on_error=1" UBSAN_OPTIONS="halt_on_error=1" \
              "$out/asan" || status=1 ;;
      valgrind) gcc "${flags[@]}" "${sources[@]}" -o "$out/plain" -lm
            echo "== valgrind memcheck"
            valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
              --errors-for-leak-kinds=definite,indirect --error-exitcode=1 "$out/plain" \
              || status=1 ;;
      *) echo "unknown tool $t" >&2; exit 2 ;;
    esac
  done
done
exit $status
