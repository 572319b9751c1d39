// Package localtrust decides whether a local file, socket or directory
// may be trusted before it is used: the state database, the secret key
// files, the local API socket, the driver plugins.
//
// A file is trusted when its owner is the effective user (or root, where
// the rule allows it: plugins installed by root), its mode gives no
// write (or, for secrets, no access at all) to group and others, and no
// other user can replace it: every directory from it up to / is owned by
// the effective user or root and is not writable by group or others,
// unless it is sticky (like /tmp: there others can't rename or remove
// what is ours). A symbolic link is followed only when the effective
// user owns it; its target is checked the same way.
//
// Root trusts nothing owned by another user: a file planted by an
// unprivileged user is what would make root its victim.
//
// On systems without Unix owners and modes (Windows) only a missing file
// is reported.
package localtrust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrUntrusted is wrapped by every refusal.
var ErrUntrusted = errors.New("untrusted local file")

// Rule says what a trusted file looks like.
type Rule struct {
	// What names the file in messages: "state file", "secret key file".
	What string
	// Type is the file's type: 0 for a regular file, fs.ModeSocket,
	// fs.ModeDir.
	Type fs.FileMode
	// Deny are the permission bits that must be clear: 0o022 (no write
	// by group and others) or 0o077 (no access by them at all).
	Deny fs.FileMode
	// RootOwned: a file (and directory) owned by root is trusted as well
	// as one owned by the effective user.
	RootOwned bool
	// NoSticky: the file's own directory must not be writable by group
	// or others even when it is sticky (a plugin directory: anyone could
	// add a file to it).
	NoSticky bool
	// Fix says what to do instead, ending the messages: "use a --state in
	// a directory only you can write".
	Fix string
}

// Check checks the file at path against r. A missing file is an error
// wrapping fs.ErrNotExist (its directory is not checked: use CheckDir
// before creating one).
func Check(path string, r Rule) error {
	fi, err := os.Lstat(path)
	if err != nil || !unixOwners {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if err := r.owner(path, fi, "a symbolic link "); err != nil {
			return err
		}
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.What, path, err)
		}
		return Check(real, r)
	}
	if err := r.owner(path, fi, ""); err != nil {
		return err
	}
	if err := r.mode(path, fi); err != nil {
		return err
	}
	return r.dirs(r.the(path), filepath.Dir(path), r.NoSticky)
}

// CheckOpened checks the file f, opened from path, against r's owner,
// type and mode, by f itself (fstat): what was opened is what is
// checked, whatever was at path when Check looked. Its directories are
// not checked again (Check or CheckDir did).
func CheckOpened(f *os.File, path string, r Rule) error {
	if !unixOwners {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s %s: %w", r.What, path, err)
	}
	if err := r.owner(path, fi, ""); err != nil {
		return err
	}
	return r.mode(path, fi)
}

// CheckDir checks the directory dir, where a file of the rule's kind is
// about to be created, and each directory above it.
func CheckDir(dir string, r Rule) error {
	if !unixOwners {
		return nil
	}
	return r.dirs("a new "+r.What+" in "+dir, dir, r.NoSticky)
}

// dirs checks dir and its parents up to /, after resolving symbolic
// links, for the file subject names. noSticky applies to dir itself.
func (r Rule) dirs(subject, dir string, noSticky bool) error {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", r.What, dir, err)
	}
	for d, i := abs, 0; i < 256; d, i = filepath.Dir(d), i+1 {
		if err := r.dir(subject, d, noSticky && i == 0); err != nil {
			return err
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
	return fmt.Errorf("%s: directory %s: too deep", r.What, dir)
}

// dir checks one directory above the file subject names: owned by the
// effective user or root, not writable by group and others unless sticky
// (and sticky allowed).
func (r Rule) dir(subject, d string, noSticky bool) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", r.What, d, err)
	}
	if uid := ownerOf(fi); uid != os.Geteuid() && uid != 0 {
		return r.refuse(subject, "its directory %s is owned by uid %d, not you (uid %d) or root, so that user can replace what it holds", d, uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 == 0 {
		return nil
	}
	if fi.Mode()&fs.ModeSticky != 0 && !noSticky {
		return nil
	}
	return r.refuse(subject, "its directory %s has mode %s, so others than its owner can add or replace files in it: run `chmod go-w %s`", d, modeString(fi.Mode()), d)
}

// owner checks that fi (of path; link: "a symbolic link " or "") is
// owned by the effective user, or by root when the rule allows it.
func (r Rule) owner(path string, fi fs.FileInfo, link string) error {
	uid, me := ownerOf(fi), os.Geteuid()
	if uid == me || (uid == 0 && r.RootOwned) {
		return nil
	}
	return r.refuse(r.the(path), "%sowned by uid %d, not you (uid %d); another user may have planted it: remove it", link, uid, me)
}

// mode checks the file's type and permission bits.
func (r Rule) mode(path string, fi fs.FileInfo) error {
	if fi.Mode().Type() != r.Type {
		return r.refuse(r.the(path), "not a %s", typeName(r.Type))
	}
	if perm := fi.Mode().Perm(); perm&r.Deny != 0 {
		return r.refuse(r.the(path), "mode %s lets others than its owner %s it: run `chmod %s %s`",
			modeString(fi.Mode()), verb(r.Deny), r.chmodArg(), path)
	}
	return nil
}

// the names the file at path in messages.
func (r Rule) the(path string) string { return "the " + r.What + " " + path }

// refuse is the error refusing the file subject names: what is wrong,
// what to do, and the rule's other way out.
func (r Rule) refuse(subject, format string, args ...any) error {
	msg := "refusing " + subject + ": " + fmt.Sprintf(format, args...)
	if r.Fix != "" {
		msg += ", or " + r.Fix
	}
	return fmt.Errorf("%s (%w)", msg, ErrUntrusted)
}

func typeName(t fs.FileMode) string {
	switch t {
	case fs.ModeSocket:
		return "socket"
	case fs.ModeDir:
		return "directory"
	}
	return "regular file"
}

func verb(deny fs.FileMode) string {
	if deny&0o044 != 0 {
		return "read or write"
	}
	return "write"
}

// chmodArg is what chmod takes to clear the denied bits.
func (r Rule) chmodArg() string {
	switch {
	case r.Deny&0o044 == 0:
		return "go-w"
	case r.Type == 0:
		return "600"
	}
	return "go-rwx"
}

// modeString is m's permission bits in octal as chmod takes them, with
// the set-user-ID (04000), set-group-ID (02000) and sticky (01000) bits:
// "1777" for /tmp, not "0777".
func modeString(m fs.FileMode) string {
	bits := uint32(m.Perm())
	for _, x := range []struct {
		mode fs.FileMode
		bit  uint32
	}{{fs.ModeSetuid, 0o4000}, {fs.ModeSetgid, 0o2000}, {fs.ModeSticky, 0o1000}} {
		if m&x.mode != 0 {
			bits |= x.bit
		}
	}
	return fmt.Sprintf("%04o", bits)
}
