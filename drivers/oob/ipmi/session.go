package ipmi

import (
	"fmt"

	"github.com/slipway-dev/slipway/drivers"
	goipmi "github.com/vmware/goipmi"
)

// session is an active, authenticated IPMI session: RMCP+ (lanplus) or
// IPMI v1.5 (lan).
type session interface {
	// do sends r and returns the response, whatever its completion code.
	// Errors are classified.
	do(r request) (reply, error)
	// close ends the session with Close Session.
	close()
	// systemGUID is the GUID the handshake carried, if any.
	systemGUID() [16]byte
}

// setPrivilege raises the session to priv (sessions start at User).
func setPrivilege(s session, priv byte) error {
	p, err := s.do(privilegeRequest(priv))
	if err != nil {
		return err
	}
	if p.cc != goipmi.CommandCompleted {
		return privilegeError(targetOf(s), userOf(s), priv, "Set Session Privilege Level: "+ccError(p.cc))
	}
	return nil
}

func privilegeRequest(priv byte) request {
	return request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandSetSessionPrivilegeLevel,
		data: encode(goipmi.SessionPrivilegeLevelRequest{PrivLevel: priv}), name: "Set Session Privilege Level"}
}

// closeSession sends Close Session: once, waiting for the answer (wait),
// or, when the caller's context is already done, without waiting (send).
func closeSession(l *link, send, wait func()) {
	if l.ctx.Err() != nil {
		send()
		return
	}
	saved := l.policy
	l.policy.retries = 0
	wait()
	l.policy = saved
}

func targetOf(s session) string {
	switch s := s.(type) {
	case *v2Session:
		return s.l.target
	case *v15Session:
		return s.l.target
	}
	return "?"
}

func userOf(s session) string {
	switch s := s.(type) {
	case *v2Session:
		return s.user
	case *v15Session:
		return s.user
	}
	return "?"
}

// AuthError is the error of a BMC that rejected the user name or password.
// Its message names the BMC and the user, never the password.
type AuthError struct {
	Target string // host:port
	User   string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("BMC %s rejected the credentials for user %s", e.Target, e.User)
}

// credentialsError is a Permanent *AuthError.
func credentialsError(target, user string) error {
	return drivers.NewError(drivers.Permanent, &AuthError{Target: target, User: user})
}

func privilegeError(target, user string, priv byte, detail string) error {
	return drivers.Errorf(drivers.Permanent, "BMC %s refused %s privilege to user %s: %s", target, privName(priv), user, detail)
}

func privName(p byte) string {
	switch p {
	case goipmi.PrivLevelAdmin:
		return "administrator"
	case goipmi.PrivLevelOperator:
		return "operator"
	case goipmi.PrivLevelUser:
		return "user"
	}
	return fmt.Sprintf("level %d", p)
}

// commandError classifies a completion code other than success.
func commandError(target string, r request, cc goipmi.CompletionCode) error {
	class := drivers.Permanent
	switch cc {
	case goipmi.ErrNodeBusy, goipmi.ErrCommandTimeout, goipmi.ErrOutOfSpace, goipmi.ErrNoResponse,
		goipmi.ErrInitMode, goipmi.ErrFirmwareUpMode, goipmi.ErrUnspecified:
		class = drivers.Transient
	}
	return drivers.Errorf(class, "BMC %s: %s: %s", target, r.name, ccError(cc))
}
