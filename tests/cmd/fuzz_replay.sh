#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every fuzz target's corpus (tests/fuzz/corpus/<target>) replayed through its harness, built
# without libFuzzer by `make tests` with the suite's compiler and sanitizers
# (build/tests/fuzz/fuzz_<target>, tests/fuzz/replay.c): what the fuzzers found once stays
# fixed, on gcc as on clang. A target without a corpus, or a corpus without a target, fails.
. "$(dirname "$0")/../lib.sh"

for src in "$TOP"/tests/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c); t=${t#fuzz_}
	bin="$BUILD/tests/fuzz/fuzz_$t" corpus="$TOP/tests/fuzz/corpus/$t"
	if [ ! -x "$bin" ]; then ok 1 "fuzz_$t: replay binary built ($bin missing: make tests)"; continue; fi
	files=("$corpus"/*)
	if [ ! -e "${files[0]}" ]; then ok 1 "fuzz_$t: has a corpus in tests/fuzz/corpus/$t"; continue; fi
	"$bin" "${files[@]}" >"$TMP/$t.tap" 2>&1
	rc=$?
	n=$(grep -c '^ok ' "$TMP/$t.tap")
	ok "$([ $rc -eq 0 ] && [ "$n" -eq ${#files[@]} ] && echo 0 || echo 1)" "fuzz_$t: ${#files[@]} corpus files replayed clean ($n ok, exit $rc)"
	[ $rc -eq 0 ] || grep -vE '^ok ' "$TMP/$t.tap" | head -20 | sed 's/^/#   /'
done
for d in "$TOP"/tests/fuzz/corpus/*/; do
	t=$(basename "$d")
	[ -f "$TOP/tests/fuzz/fuzz_$t.c" ]; ok $? "corpus $t has a target tests/fuzz/fuzz_$t.c"
done

done_testing
