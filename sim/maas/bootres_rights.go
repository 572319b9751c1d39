package maas

import "net/http"

// Who may call the image API (src/maasserver/api/support.py): on boot
// resources, listing, reading and is_importing are open to any user, the
// other calls are admin methods (@admin_method: 403 "This method is
// reserved for admin users."); boot sources and their selections are
// AdminRestrictedResource, closed to non-admins even for reading (403
// "User is not allowed access to this API."). The lab has a non-admin
// user only when Options.UserKey is set.

const (
	msgAdminMethod   = "This method is reserved for admin users."
	msgAdminResource = "User is not allowed access to this API."
)

// isAdmin: the named user is an admin.
func (s *Server) isAdmin(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.tokens {
		if u.name == name {
			return u.admin
		}
	}
	return false
}

// adminOnly answers 403 with msg to a non-admin before fn runs.
func adminOnly(msg string, fn handler) handler {
	return func(s *Server, req *request) (any, *apiError) {
		if !s.isAdmin(req.user) {
			return nil, errorf(http.StatusForbidden, "%s", msg)
		}
		return fn(s, req)
	}
}

// handleAdmin registers an admin method.
func (s *Server) handleAdmin(method, pattern, op string, fn handler) {
	s.handle(method, pattern, op, adminOnly(msgAdminMethod, fn))
}

// handleRestricted registers a call of an admin-restricted resource.
func (s *Server) handleRestricted(method, pattern, op string, fn handler) {
	s.handle(method, pattern, op, adminOnly(msgAdminResource, fn))
}
