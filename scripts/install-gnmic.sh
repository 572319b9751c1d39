#!/usr/bin/env bash
# Builds gnmic (the third-party gNMI client that checks the lab's gNMI
# target and the gnmi network driver) at a pinned version into
# $(go env GOPATH)/bin. `go install github.com/openconfig/gnmic@VERSION`
# does not work through this module proxy: it refuses gnmic's version
# list, and one of gnmic's dependencies, inet.af/netaddr, is served only
# under its GitHub path. So gnmic is built from a throwaway module that
# requires it and replaces that dependency with the same commit at
# github.com/inetaf/netaddr. The checksum database answers 404 for
# several of gnmic's older dependencies (gomplate v3.11.6, ygot v0.29.2),
# so this throwaway build takes modules from the proxy without it
# (GOSUMDB=off, only here; the project's own go.sum is checked as usual).
set -euo pipefail
export GOSUMDB=off
version=v0.36.0
netaddr=v0.0.0-20230525184311-b8eac61e914a
bin="$(go env GOPATH)/bin/gnmic"
# gnmic built this way reports version "dev": a stamp beside it says
# which version it is.
stamp="$bin.version"
if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
go mod init gnmic-build >/dev/null 2>&1
go mod edit -replace "inet.af/netaddr=github.com/inetaf/netaddr@$netaddr"
go get "github.com/openconfig/gnmic@$version" >/dev/null 2>&1 || go get "github.com/openconfig/gnmic@$version"
go build -o "$bin" github.com/openconfig/gnmic
"$bin" version >/dev/null
echo "$version" > "$stamp"
