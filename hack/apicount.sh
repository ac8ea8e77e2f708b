#!/usr/bin/env bash
# The size of the SDK's public API: exported names per public package and every public option field
# (the rules: hack/apicount/main.go's header, docs/api-budget.md). Checks them against the ratchet in
# hack/api-budget.txt and fails when either grew above its recorded value; prints the v0.2.0 targets.
#
#   hack/apicount.sh              measure the working tree and check the budget (make lint)
#   hack/apicount.sh -v           the same, listing every name and option field
#   hack/apicount.sh -update      lower the recorded values to the counts measured (never raises them)
#   hack/apicount.sh REV          measure commit REV (git archive; no budget check), e.g. v0.1.0's commit
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
flags=() rev=
for a in "$@"; do
	case $a in
	-*) flags+=("$a") ;;
	*) rev=$a ;;
	esac
done
if [ -z "$rev" ]; then
	cd hack && exec "$GO" run ./apicount -root .. -budget api-budget.txt "${flags[@]}"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/steadywatch-apicount.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" | tar -x -C "$tmp"
echo "at $(git rev-parse --short "$rev^{commit}"):"
(cd hack && "$GO" run ./apicount -root "$tmp" "${flags[@]}")
