#!/usr/bin/env bash
# The commit of a release, found without a tag: the commit that dated the release's section of
# CHANGELOG.md, i.e. the newest commit that added the heading "## [X.Y.Z] - YYYY-MM-DD" (Keep a
# Changelog) to CHANGELOG.md as HEAD has it. Tags are not published from this repository, so a clone
# has none; make release tags this commit, and hack/apidiff.sh compares the API with it.
#
#   hack/release-commit.sh vX.Y.Z   prints the commit of vX.Y.Z
#   hack/release-commit.sh --last   prints "vX.Y.Z COMMIT" for the newest dated section
#
# Fails with a message saying why when HEAD's CHANGELOG.md has no such section, when it is not dated,
# or when the clone is too shallow to hold the commit that dated it.
set -euo pipefail
cd "$(dirname "$0")/.."
arg=${1:?usage: hack/release-commit.sh vX.Y.Z | --last}
changelog=$(git show HEAD:CHANGELOG.md) || { echo "release-commit: HEAD has no CHANGELOG.md" >&2; exit 2; }
date_re='[0-9]{4}-[0-9]{2}-[0-9]{2}'
if [ "$arg" = --last ]; then
	heading=$(grep -E -m1 "^## \[[0-9]+\.[0-9]+\.[0-9]+[^]]*\] - $date_re\$" <<<"$changelog" || true)
	[ -n "$heading" ] || { echo "release-commit: CHANGELOG.md at HEAD has no dated release section (## [X.Y.Z] - YYYY-MM-DD)" >&2; exit 1; }
	version=v$(sed -E 's/^## \[([^]]+)\].*/\1/' <<<"$heading")
else
	version=$arg
	[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
		{ echo "release-commit: $version is not a semantic version vX.Y.Z" >&2; exit 2; }
	v=${version#v}
	any=$(grep -F -m1 "## [$v]" <<<"$changelog" || true)
	[ -n "$any" ] || { echo "release-commit: CHANGELOG.md at HEAD has no section ## [$v]: add one (rename [Unreleased]) and date it, then commit" >&2; exit 1; }
	heading=$(grep -E -m1 "^## \[${v//./\\.}\] - $date_re\$" <<<"$changelog" || true)
	[ -n "$heading" ] || { echo "release-commit: CHANGELOG.md's section for $version is not dated: make its heading \"## [$v] - $(date -u +%F)\" and commit" >&2; exit 1; }
fi
# The newest commit that added the heading: -S lists every commit that changed how often it occurs.
# In a shallow clone the oldest commit present has no parent and so seems to add the whole file: a
# boundary commit of the shallow history is never the answer.
shallow=$(cat "$(git rev-parse --git-path shallow)" 2>/dev/null || true)
for c in $(git log --format=%H -S"$heading" HEAD -- CHANGELOG.md); do
	if grep -qxF "$c" <<<"$shallow"; then
		break
	fi
	if grep -qxF "$heading" <<<"$(git show "$c:CHANGELOG.md" 2>/dev/null)"; then
		if [ "$arg" = --last ]; then echo "$version $c"; else echo "$c"; fi
		exit 0
	fi
done
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
	echo "release-commit: this clone is shallow and lacks the commit that added \"$heading\": git fetch --unshallow" >&2
else
	echo "release-commit: no commit added \"$heading\" to CHANGELOG.md" >&2
fi
exit 1
