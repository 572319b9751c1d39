#!/usr/bin/env bash
# Builds gnmic (the third-party gNMI client that checks the lab's gNMI
# target and the gnmi network driver) at a pinned version into
# $(go env GOPATH)/bin. `go install github.com/openconfig/gnmic@VERSION`
# does not work through this module proxy: it refuses gnmic's version
# list, and one of gnmic's dependencies, inet.af/netaddr, is served only
# under its GitHub path. So gnmic is built from a throwaway module
# (install-gnmic.go.mod beside this script) that requires it and
# replaces that dependency with the same commit at
# github.com/inetaf/netaddr. The checksum database answers 404 for
# several of gnmic's older dependencies (gomplate v3.11.6, ygot v0.29.2),
# so it is not asked (GOSUMDB=off, only here); instead every module's
# hash is pinned in install-gnmic.go.sum and the build is read-only
# (-mod=readonly): a module the proxy serves with other contents than
# when the pin was made fails the build ("checksum mismatch") instead
# of being compiled and run. To move to another version, regenerate
# both files (go mod init, the replace, go get gnmic@VERSION) and
# review the diff.
set -euo pipefail
export GOSUMDB=off GOFLAGS=-mod=readonly
here="$(cd "$(dirname "$0")" && pwd)"
version=v0.36.0
grep -Eq "github.com/openconfig/gnmic $version( |\$)" "$here/install-gnmic.go.mod" ||
  { echo "install-gnmic.sh: install-gnmic.go.mod does not require gnmic $version" >&2; exit 1; }
bin="$(go env GOPATH)/bin/gnmic"
# gnmic built this way reports version "dev": a stamp beside it says
# which version it is and which pins it was built from.
stamp="$bin.version"
want="$version $(sha256sum "$here/install-gnmic.go.sum" | cut -c1-16)"
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cp "$here/install-gnmic.go.mod" "$dir/go.mod"
cp "$here/install-gnmic.go.sum" "$dir/go.sum"
cd "$dir"
go build -o "$bin" github.com/openconfig/gnmic
"$bin" version >/dev/null
echo "$want" > "$stamp"
