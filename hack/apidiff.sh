#!/usr/bin/env bash
# API-compatibility check of the SDK module (the repository's root module) against its last release
# tag: apidiff (golang.org/x/exp/cmd/apidiff, built with `go run` from the Go module proxy) compares the
# exported API of every non-internal package at the tag with the working tree's, and this fails on any
# incompatible change. Without a release tag (v*) reachable from HEAD it says so and skips.
#
#   APIDIFF_BASE=<ref>   compare against another tag or commit instead of the last tag
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

base=${APIDIFF_BASE:-$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null || true)}
if [ -z "$base" ]; then
	echo "apidiff: skipped: no release tag (v*) reachable from HEAD to compare the API with"
	exit 0
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
	echo "apidiff: incompatible changes to $mod's API since $base:"
	cat "$tmp/report"
	exit 1
fi
echo "apidiff: $mod's API is compatible with $base"
cat "$tmp/report"
