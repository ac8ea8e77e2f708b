#!/usr/bin/env bash
# Releases VERSION without publishing anything: tags the commit that dated VERSION's section of
# CHANGELOG.md (hack/release-commit.sh; tags are not published from this repository, so the commit,
# not a tag, is the record of a release), proves the tag takeable as a Go user takes it
# (scripts/check-release.sh), then builds the kubectl plugin from the tagged tree for every released
# platform into dist/: one archive per platform, a SHA256SUMS file and a krew manifest
# (steadywatch.yaml) whose checksums are those of the archives.
# Usage: scripts/release.sh vX.Y.Z   (make release VERSION=vX.Y.Z)
#
# It fails, saying why, when CHANGELOG.md has no dated section for VERSION, or when a tag VERSION
# already points elsewhere. A tag it made is removed again if the check fails. Run it again at will:
# an existing tag on the right commit is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}
[ -n "$version" ] || { echo "release: VERSION is required: make release VERSION=vX.Y.Z (the version of a dated CHANGELOG.md section)" >&2; exit 2; }
case $version in v*) ;; *) echo "release: version must start with v (got $version)" >&2; exit 2 ;; esac
commit=$(hack/release-commit.sh "$version")
made=
if tagged=$(git rev-parse -q --verify "refs/tags/$version^{commit}"); then
  [ "$tagged" = "$commit" ] || { echo "release: tag $version points at $(git rev-parse --short "$tagged"), but the commit that dated its CHANGELOG section is $(git rev-parse --short "$commit")" >&2; exit 1; }
  echo "release: $version is already tagged at $(git log -1 --format='%h %s' "$commit")"
else
  git tag "$version" "$commit"
  made=1
  echo "release: tagged $version at $(git log -1 --format='%h (%cs) %s' "$commit")"
fi
if ! scripts/check-release.sh "$version"; then
  if [ -n "$made" ]; then git tag -d "$version" >/dev/null; echo "release: $version is not takeable: tag removed" >&2; fi
  exit 1
fi
repo=https://github.com/steadywatch/steadywatch
platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
dist=$PWD/dist
rm -rf "$dist"; mkdir -p "$dist"
# The plugin is built from the tagged tree, not the working tree.
tree=$(mktemp -d "${TMPDIR:-/tmp}/steadywatch-release.XXXXXX")
trap 'rm -rf "$tree"' EXIT
git archive "$version" | tar -x -C "$tree"
for p in $platforms; do
  os=${p%/*}; arch=${p#*/}
  name=kubectl-steadywatch_${version}_${os}_${arch}
  echo "==> $name"
  mkdir -p "$dist/$name"
  (cd "$tree/cmd/kubectl-steadywatch" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS=-buildvcs=false go build -trimpath \
     -ldflags "-s -w -X main.releaseVersion=$version" -o "$dist/$name/kubectl-steadywatch" .)
  cp "$tree/LICENSE" "$dist/$name/"
  # Reproducible archives: fixed owner, order and modification time.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='1970-01-01 00:00Z' \
    -C "$dist/$name" -cf - kubectl-steadywatch LICENSE | gzip -n > "$dist/$name.tar.gz"
  rm -rf "${dist:?}/$name"
done
(cd "$dist" && sha256sum ./*.tar.gz | sed 's| \./| |' > SHA256SUMS)
{
  cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: steadywatch
spec:
  version: $version
  homepage: $repo
  shortDescription: Show what an apiserver really does with resourceVersion
  description: |
    kubectl steadywatch probes an apiserver's list and watch semantics (the
    KEP-2523 resourceVersion tables of the Kubernetes API Concepts page) and
    lists or syncs a resource through the steadywatch SDK, printing every
    request sent and every fallback taken.
  platforms:
YAML
  for p in $platforms; do
    os=${p%/*}; arch=${p#*/}
    file=kubectl-steadywatch_${version}_${os}_${arch}.tar.gz
    sum=$(awk -v f="$file" '$2 == f {print $1}' "$dist/SHA256SUMS")
    cat <<YAML
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $repo/releases/download/$version/$file
    sha256: $sum
    bin: kubectl-steadywatch
YAML
  done
} > "$dist/steadywatch.yaml"
echo "release $version ($(git rev-parse --short "$commit")): $(ls "$dist" | tr '\n' ' ')"
echo "release: the tag is local; tags are not published from this repository (git push origin $version publishes it)"
