package apitypes

import "time"

// PowerCredentials is the body of PUT
// /admin/nodes/{name}/power-credentials: the BMC username and password
// the node's power calls use instead of the design's. Write-only: no
// answer ever holds them.
type PowerCredentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// PowerCredentialInfo is what is told of a node's power-credential
// override: that it is set, its version (1 when first written, one more
// at each rotation) and when it was last written. Never the username,
// the password or a digest of them.
type PowerCredentialInfo struct {
	Node    string    `json:"node"`
	Set     bool      `json:"set"`
	Version int       `json:"version"`
	Rotated time.Time `json:"rotated"`
}
