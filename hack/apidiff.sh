#!/usr/bin/env bash
# API-compatibility check of the SDK module (the repository's root module) against its last release:
# apidiff (golang.org/x/exp/cmd/apidiff, built with `go run` from the Go module proxy) compares the
# exported API of every non-internal package at the release with the working tree's, and this fails on
# any incompatible change, except before v1 when CHANGELOG.md's Unreleased section has a "### Breaking"
# subsection that announces it (v0 makes no compatibility promise, but a break is never silent).
#
# The last release is the newest dated section of CHANGELOG.md ("## [X.Y.Z] - YYYY-MM-DD"), and its
# commit is the one that dated that section (hack/release-commit.sh), so the check runs in any full
# clone: tags are not published from this repository. A tag vX.Y.Z, where one exists (make release
# makes it), must point at that commit. Before the first dated section there is nothing to compare
# with, and the check says so and passes.
#
#   APIDIFF_BASE=<ref>   compare against another tag or commit instead of the last release
#   APIDIFF_VERSION=...  the golang.org/x/exp version apidiff is built from
#
# Offline, once the tool and the module's dependencies are in the module cache:
#   GOPROXY=file://$(go env GOMODCACHE)/cache/download GOSUMDB=off hack/apidiff.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
APIDIFF_VERSION=${APIDIFF_VERSION:-v0.0.0-20260410095643-746e56fc9e2f}
# apidiff runs the tool, leaving out its note for each internal package it skips.
apidiff() {
	local status=0
	"$GO" run "golang.org/x/exp/cmd/apidiff@$APIDIFF_VERSION" "$@" 2>"$tmp/stderr" || status=$?
	grep -v '^Ignoring internal package' "$tmp/stderr" >&2 || true
	return "$status"
}

if [ -n "${APIDIFF_BASE:-}" ]; then
	base=$APIDIFF_BASE label=$APIDIFF_BASE
else
	if ! grep -qE '^## \[[0-9]+\.[0-9]+\.[0-9]+[^]]*\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$' <<<"$(git show HEAD:CHANGELOG.md)"; then
		echo "apidiff: skipped: CHANGELOG.md has no dated release section yet, so no release to compare the API with"
		exit 0
	fi
	last=$(hack/release-commit.sh --last)
	version=${last% *} commit=${last#* }
	if tagged=$(git rev-parse -q --verify "refs/tags/$version^{commit}"); then
		if [ "$tagged" != "$commit" ]; then
			echo "apidiff: tag $version points at $tagged, but the commit that dated its CHANGELOG section is $commit" >&2
			exit 1
		fi
	fi
	base=$commit label="$version ($(git rev-parse --short "$commit"))"
	echo "apidiff: the last release is $version, dated in CHANGELOG.md by $(git log -1 --format='%h (%cs)' "$commit")"
fi
mod=$("$GO" list -m)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/steadywatch-apidiff.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/base"
git archive "$base" | tar -x -C "$tmp/base"
(cd "$tmp/base" && apidiff -m -w "$tmp/base.api" "$mod")
apidiff -m -w "$tmp/head.api" "$mod"
apidiff -m "$tmp/base.api" "$tmp/head.api" >"$tmp/report"
apidiff -m -incompatible "$tmp/base.api" "$tmp/head.api" >"$tmp/incompatible"
if [ -s "$tmp/incompatible" ]; then
	# Before v1, a minor release may break the API (Go's module versioning: v0 makes no compatibility
	# promise), but never silently: the CHANGELOG's Unreleased section must say so under "### Breaking".
	if [[ "$label" == v0.* ]] && awk '/^## \[Unreleased\]/{u=1;next} /^## \[/{u=0} u && /^### Breaking/{f=1} END{exit !f}' CHANGELOG.md; then
		echo "apidiff: incompatible changes to $mod's API since $label, announced under \"### Breaking\" in CHANGELOG.md's Unreleased section:"
		cat "$tmp/report"
		exit 0
	fi
	echo "apidiff: incompatible changes to $mod's API since $label:"
	cat "$tmp/report"
	if [[ "$label" == v0.* ]]; then
		echo "apidiff: before v1 a release may break the API, but CHANGELOG.md's Unreleased section must announce it under \"### Breaking\"" >&2
	fi
	exit 1
fi
echo "apidiff: $mod's API is compatible with $label"
cat "$tmp/report"
