#!/bin/sh
# slipway-bootstrap: installs this node's boot actions from the Slipway
# introspection API and reports each action's result. Installed and run by
# the cloud-init user data Slipway deploys the node with.
#
#   1. read SLIPWAY_URL and SLIPWAY_TOKEN from the environment file (and
#      write the token to /etc/slipway/auth.header for the units)
#   2. GET /v1/self (saved as /etc/slipway/self.json) and /v1/self/assets
#      (a tar.gz: the files, plus .slipway/ with the manifest)
#   3. report "running" for every boot action
#   4. extract the files under the root, owned by root, with their modes
#   5. per action: install its packages (apt-get), enable and start its
#      units (systemctl), then report "success", or "failure" with the
#      failing step's message
#   6. exit non-zero when an action failed
#
# Environment:
#   SLIPWAY_ENV   the environment file (default /etc/slipway/bootstrap.env)
#   SLIPWAY_ROOT  install under this directory instead of / (default /);
#                 under another root, packages and units are not activated
#
# Needs only sh, curl, tar, gzip, sed, grep, tail, mktemp, tr, cut, cp,
# mkdir, chmod, rm and, when installing live, apt-get and systemctl. The
# token goes to curl in a header file, never on a command line.
set -eu

env_file=${SLIPWAY_ENV:-/etc/slipway/bootstrap.env}
root=${SLIPWAY_ROOT:-/}
live=no
if [ "$root" = / ]; then live=yes; fi

log() { printf 'slipway-bootstrap: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

case $env_file in */*) ;; *) env_file=./$env_file ;; esac
[ -r "$env_file" ] || die "cannot read $env_file"
SLIPWAY_URL=
SLIPWAY_TOKEN=
# shellcheck source=/dev/null
. "$env_file"
[ -n "$SLIPWAY_URL" ] || die "$env_file sets no SLIPWAY_URL"
[ -n "$SLIPWAY_TOKEN" ] || die "$env_file sets no SLIPWAY_TOKEN"
SLIPWAY_URL=${SLIPWAY_URL%/}

umask 022
work=$(mktemp -d "${TMPDIR:-/tmp}/slipway-bootstrap.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' HUP INT TERM

# The token, for curl -H @file (printf is a shell builtin: no argv).
hdr=$work/auth.header
: >"$hdr"
chmod 600 "$hdr"
printf 'Authorization: Bearer %s\n' "$SLIPWAY_TOKEN" >"$hdr"

CURL="curl -fsS --retry 10 --retry-connrefused --connect-timeout 10"

fetch() { # fetch PATH FILE
	$CURL --max-time 300 -H @"$hdr" -o "$2" "$SLIPWAY_URL$1"
}

# last_line TEXT: the last non-empty line of TEXT, cut to 500 bytes.
last_line() {
	printf '%s\n' "$1" | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c 1-500
}

json_string() { # the JSON string body of $1: one line, quotes and backslashes escaped
	printf '%s' "$1" | tr '\n\r\t' '   ' | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g'
}

report() { # report ACTION STATUS MESSAGE
	printf '{"status":"%s","message":"%s"}' "$2" "$(json_string "$3")" |
		$CURL --max-time 60 -X POST -H @"$hdr" -H 'Content-Type: application/json' \
			--data-binary @- -o /dev/null "$SLIPWAY_URL/v1/self/actions/$1" ||
		log "could not report $2 for boot action $1"
}

meta=$work/.slipway
mkdir -p "$root/etc/slipway"
# The units of boot actions report with /etc/slipway/auth.header: it holds
# the environment file's token (after a rebootstrap, only that file is new).
(umask 077 && cp "$hdr" "$root/etc/slipway/auth.header")
chmod 600 "$root/etc/slipway/auth.header"
fetch /v1/self "$work/self.json" || die "could not fetch /v1/self from $SLIPWAY_URL"
cp "$work/self.json" "$root/etc/slipway/self.json"
fetch /v1/self/assets "$work/assets.tar.gz" || die "could not fetch /v1/self/assets from $SLIPWAY_URL"
tar -xzf "$work/assets.tar.gz" -C "$work" .slipway/manifest.json .slipway/actions.txt \
	.slipway/units.txt .slipway/packages.txt .slipway/files.txt ||
	die "the assets archive has no .slipway manifest"
cp "$meta/manifest.json" "$root/etc/slipway/manifest.json"

# fields ACTION FILE: the second fields of ACTION's lines (names are
# DNS labels: safe in a sed pattern).
fields() { sed -n "s/^$1 //p" "$2"; }

while read -r name _ <&3; do
	if [ -n "$name" ]; then report "$name" running "installing"; fi
done 3<"$meta/actions.txt"

if [ -s "$meta/files.txt" ]; then
	if ! out=$(tar -xzpf "$work/assets.tar.gz" -C "$root" --no-same-owner -T "$meta/files.txt" 2>&1); then
		msg="extract the assets: $(last_line "$out")"
		log "$msg"
		while read -r name _ <&3; do
			if [ -n "$name" ]; then report "$name" failure "$msg"; fi
		done 3<"$meta/actions.txt"
		exit 1
	fi
fi

systemd=no
if [ "$live" = yes ] && command -v systemctl >/dev/null 2>&1; then
	systemd=yes
	if [ -s "$meta/units.txt" ]; then
		systemctl daemon-reload || log "systemctl daemon-reload failed"
	fi
fi
if [ "$live" != yes ]; then
	log "installing under $root: packages and units are not activated"
fi

apt_updated=no
failed=0
while read -r name _ <&3; do
	if [ -z "$name" ]; then continue; fi
	msg=
	pkgs=$(fields "$name" "$meta/packages.txt" | tr '\n' ' ')
	if [ -n "${pkgs% }" ] && [ "$live" != yes ]; then
		log "boot action $name: packages not installed under $root: $pkgs"
	elif [ -n "${pkgs% }" ]; then
		if ! command -v apt-get >/dev/null 2>&1; then
			msg="packages to install ($pkgs) but no apt-get"
		else
			if [ "$apt_updated" = no ]; then
				DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >/dev/null 2>&1 ||
					log "apt-get update failed; installing from the cached package lists"
				apt_updated=yes
			fi
			# shellcheck disable=SC2086 # one word per package, checked by the API
			if ! out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkgs </dev/null 2>&1); then
				msg="apt-get install $pkgs: $(last_line "$out")"
			fi
		fi
	fi
	if [ -z "$msg" ] && [ "$systemd" = yes ]; then
		for unit in $(fields "$name" "$meta/units.txt"); do
			if ! out=$(systemctl enable --now "$unit" </dev/null 2>&1); then
				msg="systemctl enable --now $unit: $(last_line "$out")"
				break
			fi
		done
	fi
	if [ -z "$msg" ]; then
		report "$name" success "installed"
	else
		failed=1
		log "boot action $name failed: $msg"
		report "$name" failure "$msg"
	fi
done 3<"$meta/actions.txt"
exit "$failed"
