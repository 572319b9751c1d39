package auth

import "fmt"

// Role says what a token may do. Roles are ordered: admin includes
// operator, which includes viewer.
type Role string

const (
	// RoleViewer may read: designs, tasks, nodes, events.
	RoleViewer Role = "viewer"
	// RoleOperator may also change things: run tasks, apply designs, use
	// the task and node verbs.
	RoleOperator Role = "operator"
	// RoleAdmin may do everything, including managing tokens and secrets.
	RoleAdmin Role = "admin"
)

// Roles are the known roles, weakest first.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// rank is the position of r in Roles plus one; 0 for an unknown role.
func (r Role) rank() int {
	for i, k := range Roles {
		if r == k {
			return i + 1
		}
	}
	return 0
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// Allows reports whether a token with role r may do what needs role need:
// admin allows everything, operator allows operator and viewer, viewer
// allows viewer. An unknown role allows nothing and is allowed by nothing.
func (r Role) Allows(need Role) bool {
	return r.rank() > 0 && need.rank() > 0 && r.rank() >= need.rank()
}

// ParseRole returns the role named s (admin, operator or viewer).
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.Valid() {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q: use admin, operator or viewer", s)
}
