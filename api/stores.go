package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/orchestrator"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// TokenStore adapts the token store to the API: the Authenticator checks
// bearer tokens against it and the Tokens manage them. Revoking an unknown
// ID wraps orchestrator.ErrNotFound, so the API answers 404; revoking the
// last admin token is a 409 and a bad role or name a 400.
func TokenStore(s *auth.Store) (Authenticator, Tokens) {
	authenticate := func(ctx context.Context, tok string) (Principal, error) {
		t, err := s.Verify(ctx, tok)
		if err != nil {
			return Principal{}, err
		}
		return tokenPrincipal(t), nil
	}
	return authenticate, tokenAdmin{s}
}

func tokenPrincipal(t auth.Token) Principal {
	return Principal{ID: t.ID, Name: t.Name, Role: Role(t.Role)}
}

// tokenAdmin adapts the token store to Tokens.
type tokenAdmin struct{ s *auth.Store }

func (t tokenAdmin) Create(ctx context.Context, role Role, name string) (string, apitypes.TokenInfo, error) {
	plain, tok, err := t.s.Create(ctx, auth.Role(role), name)
	if errors.Is(err, auth.ErrInvalid) {
		return "", apitypes.TokenInfo{}, problem(http.StatusBadRequest, err.Error())
	}
	return plain, tokenInfo(tok), err
}

func (t tokenAdmin) List(ctx context.Context) ([]apitypes.TokenInfo, error) {
	ts, err := t.s.List(ctx)
	out := make([]apitypes.TokenInfo, 0, len(ts))
	for _, tok := range ts {
		out = append(out, tokenInfo(tok))
	}
	return out, err
}

// tokenInfo is what the API says of a token: never its value.
func tokenInfo(t auth.Token) apitypes.TokenInfo {
	return apitypes.TokenInfo{Principal: tokenPrincipal(t), Created: t.Created, LastUsed: t.LastUsed}
}

func (t tokenAdmin) Revoke(ctx context.Context, id string) error {
	err := t.s.Revoke(ctx, id)
	if errors.Is(err, auth.ErrLastAdmin) {
		return problem(http.StatusConflict, err.Error())
	}
	return notFound(err, auth.ErrNotFound)
}

// SecretStore adapts the encrypted secret store to the API. Deleting a
// secret that is not stored wraps orchestrator.ErrNotFound, so the API
// answers 404. A nil store gives nil Secrets: the secret routes answer 501.
func SecretStore(s *secretstore.Store) Secrets {
	if s == nil {
		return nil
	}
	return secretAdmin{s}
}

// secretAdmin adapts the encrypted secret store to Secrets.
type secretAdmin struct{ s *secretstore.Store }

func (s secretAdmin) Put(ctx context.Context, name, value string) error {
	err := s.s.Put(ctx, name, value)
	if errors.Is(err, secretstore.ErrNoKey) {
		return problem(http.StatusNotImplemented, "this server holds no secret key, so it can list and delete secrets but not store them: give it a key (its key file or "+secretstore.KeyEnv+") and restart it")
	}
	return err
}

func (s secretAdmin) Delete(ctx context.Context, name string) error {
	return notFound(s.s.Delete(ctx, name), secretstore.ErrNotFound)
}

func (s secretAdmin) Names(ctx context.Context) ([]SecretInfo, error) {
	is, err := s.s.List(ctx)
	out := make([]SecretInfo, 0, len(is))
	for _, i := range is {
		out = append(out, SecretInfo{Name: i.Name, Created: i.Created, Updated: i.Updated})
	}
	return out, err
}

// notFound wraps orchestrator.ErrNotFound around err when it is a store's
// own not-found error.
func notFound(err, storeNotFound error) error {
	if errors.Is(err, storeNotFound) {
		return fmt.Errorf("%w: %v", orchestrator.ErrNotFound, err)
	}
	return err
}
