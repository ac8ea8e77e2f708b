#!/usr/bin/env bash
# Proves a tag is takeable as a Go user takes it: serves the SDK module at TAG from a local module proxy
# (GOPROXY=file://..., laid out as the Go module proxy protocol describes) and builds the README's quick
# start in a fresh module outside the repository that requires github.com/steadywatch/steadywatch@TAG.
# Usage: scripts/check-release.sh v0.1.0
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:?usage: scripts/check-release.sh TAG}
mod=github.com/steadywatch/steadywatch
git rev-parse -q --verify "refs/tags/$tag" >/dev/null || { echo "check-release: no tag $tag" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
src=$work/src/$mod@$tag
mkdir -p "$src" "$work/proxy/$mod/@v" "$work/user"
git archive "$tag" | tar -x -C "$src"
# A module zip holds no nested module (every directory with a go.mod of its own).
(cd "$src" && find . -mindepth 2 -name go.mod -printf '%h\n' | xargs -r rm -rf)
(cd "$work/src" && zip -qr "$work/proxy/$mod/@v/$tag.zip" "$mod@$tag")
cp "$src/go.mod" "$work/proxy/$mod/@v/$tag.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$tag" "$(git log -1 --format=%cI "$tag")" > "$work/proxy/$mod/@v/$tag.info"
echo "$tag" > "$work/proxy/$mod/@v/list"
# The quick start: the README's first Go block marked <!-- compile: main -->.
awk '/<!-- compile: main -->/{f=1; next} f && /^```go/{p=1; next} p && /^```/{exit} p' README.md > "$work/user/main.go"
cd "$work/user"
export GOPROXY="file://$work/proxy,$(go env GOPROXY)" GONOSUMDB=$mod GOFLAGS=-mod=mod
go mod init example.com/quickstart >/dev/null 2>&1
go get "$mod@$tag" >/dev/null
go mod tidy >/dev/null
go build -o /dev/null .
echo "check-release: a module outside the repository requiring $mod@$tag builds the README's quick start"
grep "$mod" go.mod
