#!/usr/bin/env bash
# Interleaved per-event and per-page benchmarks of two commits, compared with benchstat.
#
#   hack/benchcmp.sh [BASE] [ROUNDS]     (defaults: c27599c, 10)
#
# Builds the lister and reflector test binaries of BASE (in a temporary worktree) and of the working
# tree, runs them alternately ROUNDS times (so drift in the machine's load hits both sides alike) and
# prints benchstat's comparison. Run it on a quiet machine; 10 rounds take about 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
base=${1:-c27599c}
rounds=${2:-10}
bench_lister='PaginatedList PageStream PageStreamProto StreamingListEvent PlainWatchEvent ListPages'
bench_reflector='ReflectorWatchEvent'
# Commits before the rename name these benchmarks by their old names; a base
# binary runs whichever of the two names it has, and its output is printed
# under the current name so benchstat pairs the rows.
old_name() {
	case $1 in
	PaginatedList) echo P4Pages ;;
	PageStream | PageStreamProto | PlainWatchEvent) echo "P4$1" ;;
	StreamingListEvent) echo P4StreamEvent ;;
	ReflectorWatchEvent) echo P4WatchEvent ;;
	*) echo "$1" ;;
	esac
}
run_bench() { # side pkg name
	local dir=$PWD old
	[ "$1" = base ] && dir=$tmp/base
	old=$(old_name "$3")
	(cd "$dir/$2" && "$tmp/$2-$1.test" -test.run '^$' -test.bench "^Benchmark($3|$old)\$" -test.benchmem -test.benchtime 300ms) |
		sed "s/^Benchmark$old\([/ -]\)/Benchmark$3\1/" >>"$tmp/$1.txt"
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/steadywatch-benchcmp.XXXXXX")
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/base" "$base"
for side in base head; do
	dir=$PWD
	[ "$side" = base ] && dir=$tmp/base
	(cd "$dir" && "$GO" test -c -o "$tmp/lister-$side.test" ./lister && "$GO" test -c -o "$tmp/reflector-$side.test" ./reflector)
done
for i in $(seq 1 "$rounds"); do
	echo "round $i of $rounds" >&2
	for side in base head; do
		# One process per benchmark: the heap an earlier benchmark leaves
		# behind (the decoded lists of ListPages are 10 MiB each) is
		# collected during a later one's timed loop, and skewed the per-event
		# figures by up to 20% either way.
		for b in $bench_lister; do
			run_bench "$side" lister "$b"
		done
		for b in $bench_reflector; do
			run_bench "$side" reflector "$b"
		done
	done
done
"$GO" run golang.org/x/perf/cmd/benchstat@latest "$tmp/base.txt" "$tmp/head.txt"
