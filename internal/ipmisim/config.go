package ipmisim

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Files in a BMC's Dir.
const (
	lanConfFile  = "lan.conf"
	emuCmdFile   = "emu.cmd"
	chassisCtl   = "chassisctl"
	chassisLog   = "chassis.log"  // one line per chassisctl call, as ipmi_sim passed it
	simLogFile   = "ipmi_sim.log" // ipmi_sim's stdout and stderr
	stateSubdir  = "state"        // ipmi_sim -s
	powerFile    = "power"        // "0" or "1"
	bootFile     = "boot"         // none, pxe, disk, cdrom, bios; absent until set
	resetsFile   = "resets"       // how many hard resets were requested
	identifyFile = "identify"     // last chassis identify request: "SECONDS FORCE"
)

// emuCmd sets up one BMC at IPMB address 0x20 with an SEL and no sensors.
const emuCmd = `mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 1000 0x0a
mc_enable 0x20
`

// lanConf renders the BMC's lan.conf: one LAN channel on addr:port with the
// given user in slot 2, chassis control through the chassisctl script.
func lanConf(b *BMC, shPath string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# written by internal/ipmisim\n")
	fmt.Fprintf(&s, "name %q\n", b.Name)
	s.WriteString("set_working_mc 0x20\n")
	s.WriteString("  startlan 1\n")
	fmt.Fprintf(&s, "    addr %s %d\n", b.Address, b.Port)
	s.WriteString("    priv_limit admin\n")
	for _, p := range []string{"callback", "user", "operator", "admin"} {
		fmt.Fprintf(&s, "    allowed_auths_%s none md2 md5 straight\n", p)
	}
	fmt.Fprintf(&s, "    guid %s\n", hex.EncodeToString(b.guid[:]))
	s.WriteString("  endlan\n")
	// ipmi_sim runs this string through popen (sh -c) with " get NAME" or
	// " set NAME \"VALUE\"" appended. The script is run by sh explicitly, so
	// a noexec temp dir does not matter. Paths were checked by safePath.
	fmt.Fprintf(&s, "  chassis_control \"'%s' '%s' '%s'\"\n",
		shPath, filepath.Join(b.Dir, chassisCtl), b.Dir)
	fmt.Fprintf(&s, "  user 2 true \"%s\" \"%s\" admin 10\n", b.Username, b.Password)
	return s.String()
}

// chassisScript is the chassis_control program. ipmi_sim calls it as
//
//	chassisctl DIR get NAME...             -> prints NAME:VALUE lines
//	chassisctl DIR set NAME VALUE [NAME VALUE]...
//
// with NAME one of power, boot, reset, shutdown, identify. A power cycle
// arrives as "set power 0" at once and "set power 1" about a second later
// (ipmi_sim's own timer). ipmi_sim calls the hard-disk boot device "default";
// the script stores it as "disk" and translates back on get.
const chassisScript = `#!/bin/sh
# chassis_control program for one ipmi_sim BMC, written by internal/ipmisim.
#   chassisctl DIR get NAME...                    prints NAME:VALUE lines
#   chassisctl DIR set NAME VALUE [NAME VALUE]... stores the values
# NAME: power (0|1), boot (none pxe default cdrom bios), reset (1),
# shutdown (1: power off), identify ("SECONDS FORCE").
# State: DIR/power, DIR/boot, DIR/resets, DIR/identify; calls: DIR/chassis.log.
set -u
dir=${1:?usage: chassisctl DIR get|set NAME [VALUE]...}
shift

die() {
	echo "chassisctl: $*" >&2
	exit 1
}

[ $# -ge 1 ] || die "missing get|set"
printf '%s\n' "$*" >>"$dir/chassis.log"

# load NAME DEFAULT: print the stored value of NAME, or DEFAULT.
load() {
	v=
	if [ -f "$dir/$1" ]; then
		IFS= read -r v <"$dir/$1" || :
	fi
	printf '%s' "${v:-$2}"
}

# store NAME VALUE: replace DIR/NAME atomically.
store() {
	printf '%s\n' "$2" >"$dir/.$1.$$" && mv -f "$dir/.$1.$$" "$dir/$1" ||
		die "cannot store $1"
}

# pairs MODE NAME VALUE...: MODE check only validates, MODE apply stores.
pairs() {
	mode=$1
	shift
	if [ $# -lt 2 ] || [ $(($# % 2)) -ne 0 ]; then
		die "set needs NAME VALUE pairs, got: $*"
	fi
	while [ $# -ge 2 ]; do
		name=$1
		val=$2
		shift 2
		case $name in
		power)
			case $val in 0 | 1) ;; *) die "bad power value '$val'" ;; esac
			if [ "$mode" = apply ]; then store power "$val"; fi
			;;
		boot)
			case $val in
			default) val=disk ;;
			'' | *[!a-z0-9]*) die "bad boot device '$val'" ;;
			esac
			if [ "$mode" = apply ]; then store boot "$val"; fi
			;;
		reset)
			case $val in 0 | 1) ;; *) die "bad reset value '$val'" ;; esac
			if [ "$mode" = apply ] && [ "$val" = 1 ]; then
				n=$(load resets 0)
				store resets $((n + 1))
			fi
			;;
		shutdown)
			case $val in 0 | 1) ;; *) die "bad shutdown value '$val'" ;; esac
			if [ "$mode" = apply ] && [ "$val" = 1 ]; then store power 0; fi
			;;
		identify)
			if [ "$mode" = apply ]; then store identify "$val"; fi
			;;
		*) die "unknown parameter '$name'" ;;
		esac
	done
	return 0
}

op=$1
shift
case $op in
get)
	[ $# -ge 1 ] || die "get needs a parameter name"
	for name in "$@"; do
		case $name in
		power) echo "power:$(load power 0)" ;;
		boot)
			b=$(load boot none)
			if [ "$b" = disk ]; then b=default; fi
			echo "boot:$b"
			;;
		reset | shutdown) echo "$name:0" ;;
		identify) echo "identify:$(load identify '0 0')" ;;
		*) die "unknown parameter '$name'" ;;
		esac
	done
	;;
set)
	pairs check "$@"
	pairs apply "$@"
	;;
check) ;;
*) die "unknown operation '$op'" ;;
esac
exit 0
`

// writeConfig writes lan.conf (for b.Port), emu.cmd and the chassis script
// into b.Dir, and the initial chassis state (power off, no boot device) if
// there is none yet.
func writeConfig(b *BMC, shPath string) error {
	files := []struct {
		name string
		data string
		mode os.FileMode
	}{
		{lanConfFile, lanConf(b, shPath), 0o600},
		{emuCmdFile, emuCmd, 0o644},
		{chassisCtl, chassisScript, 0o755},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(b.Dir, f.name), []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(b.Dir, powerFile)); os.IsNotExist(err) {
		if err := writeState(b.Dir, powerFile, "0"); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(b.Dir, stateSubdir), 0o755)
}

// writeState replaces dir/name with value and a newline, atomically, the way
// the chassis script does.
func writeState(dir, name, value string) error {
	f, err := os.CreateTemp(dir, "."+name+".go-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(value + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// readState returns the trimmed content of dir/name.
func readState(dir, name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// safePath reports an error for a path that cannot be put inside the
// chassis_control string of lan.conf: it is quoted twice there (lan.conf
// double quotes, shell single quotes), with no escapes.
func safePath(p string) error {
	if i := strings.IndexAny(p, "'\"\\$`\n\r\t"); i >= 0 {
		return fmt.Errorf("ipmisim: path %q contains %q, which lan.conf's chassis_control cannot quote; use a simpler Options.Dir", p, p[i])
	}
	return nil
}

// checkCredential rejects what lan.conf cannot hold or IPMI does not allow.
func checkCredential(what, s string, maxLen int) error {
	if s == "" || len(s) > maxLen {
		return fmt.Errorf("ipmisim: %s must be 1 to %d bytes, got %d", what, maxLen, len(s))
	}
	for _, r := range s {
		if r <= ' ' || r > '~' || strings.ContainsRune("'\"\\$`", r) {
			return fmt.Errorf("ipmisim: %s may only hold printable ASCII without spaces, quotes, backslash, $ or `", what)
		}
	}
	return nil
}
