package api

import (
	"crypto/rand"

	"github.com/labstack/echo/v4"
)

const (
	clientRequestIDKey = "slipway.clientRequestId"
	// maxClientRequestID bounds a client's X-Request-Id that is kept.
	maxClientRequestID = 64
)

// requestID gives every request an ID of the server's own, in the
// X-Request-Id answer header and problem details. A client's X-Request-Id
// is never echoed: one of at most 64 characters from [A-Za-z0-9._:-] is
// kept as the client's request ID (the audit record's client_request_id,
// the log line's client_request_id); any other is ignored.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderXRequestID, rand.Text())
		if id := c.Request().Header.Get(echo.HeaderXRequestID); safeClientRequestID(id) {
			c.Set(clientRequestIDKey, id)
		}
		return next(c)
	}
}

func clientRequestID(c echo.Context) string {
	id, _ := c.Get(clientRequestIDKey).(string)
	return id
}

func safeClientRequestID(s string) bool {
	if s == "" || len(s) > maxClientRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
