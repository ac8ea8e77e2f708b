#!/usr/bin/env bash
# Proves a release tag takeable as a Go user takes it, with nothing published: the SDK module at TAG is
# served from a local module proxy built from the tag with git archive (GOPROXY=file://..., laid out
# as the Go module proxy protocol describes: list, .info, .mod, .zip), ahead of the usual proxies for
# every other module. The module cache's copy of the SDK at TAG, if any, is removed first, so nothing
# cached from an earlier run (of another commit tagged TAG) stands in for it. Then, in a module outside
# the repository:
#   1. go get github.com/steadywatch/steadywatch@TAG resolves that version (go list -m prints it, with no
#      replace), and the README's quick start at TAG builds against it;
#   2. the quick start (lister and reflector) builds no package of Prometheus' client, cobra or
#      k8s.io/cli-runtime: the modules a user who does not import metrics/prometheus or the plugin never
#      compiles;
#   3. where the plugin is a package of the SDK module at TAG (cmd/kubectl-steadywatch without a go.mod
#      of its own), go install .../cmd/kubectl-steadywatch@TAG installs it, and its `version` says TAG.
# Usage: scripts/check-release.sh TAG   (make check-release VERSION=TAG; make release runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:?usage: scripts/check-release.sh TAG}
mod=github.com/steadywatch/steadywatch
GO=${GO:-go}
git rev-parse -q --verify "refs/tags/$tag^{commit}" >/dev/null || { echo "check-release: no tag $tag (make release VERSION=$tag makes it)" >&2; exit 2; }
upstream=$("$GO" env GOPROXY) cache=$("$GO" env GOMODCACHE)
work=$(mktemp -d "${TMPDIR:-/tmp}/steadywatch-check-release.XXXXXX")
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
src=$work/src/$mod@$tag
mkdir -p "$src" "$work/proxy/$mod/@v" "$work/user" "$work/bin"
git archive "$tag" | tar -x -C "$src"
# A module zip holds no nested module (every directory with a go.mod of its own), as the go command
# builds it from a VCS tag.
(cd "$src" && find . -mindepth 2 -name go.mod -printf '%h\n' | sort -r | xargs -r rm -rf)
(cd "$work/src" && zip -qrX "$work/proxy/$mod/@v/$tag.zip" "$mod@$tag")
cp "$src/go.mod" "$work/proxy/$mod/@v/$tag.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$tag" "$(git log -1 --format=%cI "$tag")" >"$work/proxy/$mod/@v/$tag.info"
echo "$tag" >"$work/proxy/$mod/@v/list"

# The module cache's copy of the SDK at TAG: only that version of this module.
[ -n "$cache" ] || { echo "check-release: go env GOMODCACHE is empty" >&2; exit 2; }
for stale in "$cache/$mod@$tag" "$cache/cache/download/$mod/@v/$tag".*; do
	if [ -e "$stale" ]; then chmod -R u+w "$stale" && rm -rf "$stale"; fi
done
export GOPROXY="file://$work/proxy,$upstream" GONOSUMDB=$mod GOFLAGS=-mod=mod GOWORK=off GOBIN=$work/bin
cd "$work/user"
"$GO" mod init example.com/quickstart >/dev/null 2>&1
# 1. The version resolves, and the quick start builds against it.
"$GO" get "$mod@$tag" >/dev/null
got=$("$GO" list -m -f '{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}}{{end}}' "$mod")
[ "$got" = "$mod $tag" ] || { echo "check-release: go get $mod@$tag resolved \"$got\"" >&2; exit 1; }
awk '/<!-- compile: main -->/{f=1; next} f && /^```go/{p=1; next} p && /^```/{exit} p' "$src/README.md" >main.go
[ -s main.go ] || { echo "check-release: README.md at $tag has no Go block marked <!-- compile: main -->" >&2; exit 1; }
"$GO" mod tidy >/dev/null
"$GO" build -o /dev/null .
echo "check-release: a module outside the repository resolves $mod@$tag and builds the README's quick start"
# 2. What the quick start compiles.
heavy=$("$GO" list -deps -f '{{with .Module}}{{.Path}}{{end}}' . | sort -u |
	grep -E '^(github\.com/prometheus/|github\.com/spf13/cobra$|k8s\.io/cli-runtime$|sigs\.k8s\.io/kustomize/)' || true)
if [ -n "$heavy" ]; then
	echo "check-release: the quick start compiles packages of:" $heavy >&2
	exit 1
fi
echo "check-release: the quick start compiles no package of Prometheus' client, cobra, k8s.io/cli-runtime or kustomize"
# 3. The plugin, where it is a package of the SDK module.
if [ -f "$src/cmd/kubectl-steadywatch/main.go" ]; then
	"$GO" install "$mod/cmd/kubectl-steadywatch@$tag"
	v=$("$work/bin/kubectl-steadywatch" version)
	grep -qF "$tag" <<<"$v" || { echo "check-release: the installed plugin's version does not say $tag:" >&2; echo "$v" >&2; exit 1; }
	echo "check-release: go install $mod/cmd/kubectl-steadywatch@$tag installs the plugin:"
	sed 's/^/  /' <<<"$v"
else
	echo "check-release: the plugin is not a package of the SDK module at $tag (its own module): go install skipped"
fi
