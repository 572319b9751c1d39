package maas

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// apiError is an error answered the way MAAS answers it: a status code and
// a plain-text message (or, for form validation, a JSON object of field
// errors).
type apiError struct {
	status     int
	msg        string
	fields     map[string][]string // 400 validation errors
	retryAfter int                 // seconds, for 503
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

func notFound(what string) *apiError {
	return errorf(http.StatusNotFound, "No %s matches the given query.", what)
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, fields: map[string][]string{field: {fmt.Sprintf(format, args...)}}}
}

func conflict(format string, args ...any) *apiError {
	return errorf(http.StatusConflict, format, args...)
}

func (e *apiError) write(w http.ResponseWriter) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if e.fields != nil {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(e.status)
		_ = json.NewEncoder(w).Encode(e.fields)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(e.status)
	_, _ = w.Write([]byte(e.msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
