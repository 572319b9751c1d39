package server

import (
	"os"
	"os/user"
	"strconv"
	"strings"
)

// maxRequesterName bounds the OS user name a local task records.
const maxRequesterName = 64

// osUser names the local operator for the records of the tasks and verbs
// they run: "cli:" and the OS account's name (os/user), else $USER or
// $LOGNAME, else "uid:N". The name is cut to maxRequesterName bytes and
// any character but a printable ASCII one other than a space becomes '?'.
func osUser(current func() (*user.User, error), getenv func(string) string, uid int) string {
	name := ""
	if u, err := current(); err == nil && u != nil {
		name = u.Username
	}
	for _, v := range []string{"USER", "LOGNAME"} {
		if strings.TrimSpace(name) != "" {
			break
		}
		name = getenv(v)
	}
	if strings.TrimSpace(name) == "" {
		name = "uid:" + strconv.Itoa(uid)
	}
	if len(name) > maxRequesterName {
		name = name[:maxRequesterName]
	}
	b := []byte(name)
	for i, c := range b {
		if c <= ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return "cli:" + string(b)
}

// LocalRequester names this process's OS user as a local task's requester.
func LocalRequester() string { return osUser(user.Current, os.Getenv, os.Getuid()) }
