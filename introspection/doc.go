// Package introspection is the API that deployed nodes call while they
// bootstrap: a node learns who it is (its resolved design), fetches the
// assets of the boot actions that target it and reports each action's
// result. It listens apart from the control API, and it implements
// [orchestrator.Bootstrapper] for the engine.
//
// # Identity
//
// A node authenticates with a token of its own for one deployment (one
// allocation of its machine):
//
//	"sni_" + base64url(HMAC-SHA256(Key, node + "\x00" + deployment))
//
// [Server.UserData] puts it into the node's cloud-init user data. It is
// deterministic, so asking again for the same deployment (the engine may
// deploy again after a crash) gives the same user data, yet the state
// holds nothing that can be presented as a token: only its SHA-256. A new
// deployment's token replaces the previous one (rotation), and
// [Server.EndDeployment] deletes it (revocation). A request is checked by
// hashing the presented token and looking the hash up; the record found is
// then checked against the token recomputed from the key with
// [crypto/subtle.ConstantTimeCompare]. No route takes a node name: a token
// only ever yields its own node's data. With [Config.CheckSource], the
// request must also come from one of the node's design addresses.
//
// Tokens are never logged, never put into errors or problem details; the
// request log names routes by their pattern, since the NoCloud routes
// carry the token in their path.
//
// # Layout
//
// In the [Store]:
//
//	collection "node_tokens"    key: hex SHA-256 of a token
//	                            value: JSON {node, deployment, revision, issued}
//	collection "node_token_of"  key: node name → hex SHA-256 of its current token
//	collection "node_actions"   key: node "/" deployment "/" action
//	                            value: JSON [Report]
//	log "events"                the engine's event log: one event of kind
//	                            "action" per report, written with it
//
// The revision is the design revision the token was issued with: the
// node is answered from that revision whatever was applied since.
//
// # Several processes
//
// A server caches the sessions of the tokens it verified. Issue, reissue
// and revoke drop what they change from the cache of the process that
// made the change. When several processes share the store (`serve`
// replicas on etcd), the others follow it through [Server.Follow], given
// the store as a [statestore.Watcher]: a token rotated, reissued or
// revoked by one is refused by the others as soon as their watch tells of
// it, and a report stored by one wakes the engine of the others
// ([Server.NotifyReports]). The bbolt and memory stores serve one process
// and need none.
//
// # Routes
//
//	GET  /v1/self                       the node's resolved design ([Self])
//	GET  /v1/self/assets                application/gzip tar of its rendered assets
//	GET  /v1/self/packages              its pkgList assets ([Packages])
//	POST /v1/self/actions/{action}      report an action's result ([ReportRequest])
//	GET  /v1/nocloud/{token}/meta-data  cloud-init NoCloud seed (the token in the path)
//	GET  /v1/nocloud/{token}/user-data
//	GET  /v1/nocloud/{token}/vendor-data
//	GET  /v1/nocloud/{token}/network-config
//	GET  /healthz
//
// The /v1/self routes take the token as "Authorization: Bearer <token>".
package introspection
