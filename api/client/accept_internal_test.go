package client

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A stream's call says what it accepts (the event stream's Accept was
// overwritten with application/json before); other calls accept JSON.
func TestAcceptHeader(t *testing.T) {
	accepts := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepts <- r.Header.Get("Accept")
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	c, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.openStream(t.Context(), 0, "", "")
	_, _ = c.Tasks(t.Context(), TaskQuery{})
	if got := <-accepts; got != "text/event-stream" {
		t.Errorf("the event stream's Accept: %q", got)
	}
	if got := <-accepts; got != "application/json" {
		t.Errorf("a JSON call's Accept: %q", got)
	}
}
