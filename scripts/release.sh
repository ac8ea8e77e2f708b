#!/usr/bin/env bash
# Builds the kubectl plugin for every released platform into dist/: one archive per platform, a
# SHA256SUMS file and a krew manifest (steadywatch.yaml) whose checksums are those of the archives.
# Usage: scripts/release.sh [VERSION]   (default: the tag at HEAD, else `git describe`)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --exact-match 2>/dev/null || git describe --tags --always --dirty)}
case $version in v*) ;; *) echo "release: version must start with v (got $version)" >&2; exit 2 ;; esac
repo=https://github.com/steadywatch/steadywatch
platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
dist=dist
rm -rf "$dist"; mkdir -p "$dist"
for p in $platforms; do
  os=${p%/*}; arch=${p#*/}
  name=kubectl-steadywatch_${version}_${os}_${arch}
  echo "==> $name"
  mkdir -p "$dist/$name"
  (cd cmd/kubectl-steadywatch && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
     -ldflags "-s -w -X main.releaseVersion=$version" -o "../../$dist/$name/kubectl-steadywatch" .)
  cp LICENSE "$dist/$name/"
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
echo "release $version: $(ls "$dist" | tr '\n' ' ')"
