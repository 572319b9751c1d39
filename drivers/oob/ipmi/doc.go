// Package ipmi is the built-in OOB driver "ipmi": power status, on, off,
// cycle and the boot device of a server's BMC over IPMI on the LAN.
//
// # Protocols
//
// Both transports are native Go on a UDP socket per call; no process is
// ever started, so the password never appears on a command line (goipmi's
// own "lanplus" transport runs ipmitool with -P PASSWORD, which is why it
// is not used):
//
//   - lanplus (IPMI v2.0 / RMCP+, the default): Open Session, RAKP 1 to 4
//     with HMAC-SHA1 (or HMAC-SHA256), the session integrity key and K1/K2,
//     then every message authenticated (HMAC-SHA1-96 / HMAC-SHA256-128
//     trailer keyed with K1) and encrypted (AES-CBC-128 with K2's first 16
//     bytes, a random IV per packet) as the cipher suite says, with session
//     sequence numbers, and Close Session at the end. Cipher suites 3 (the
//     default: HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128) and 17 (the same with
//     SHA256), also 1, 2, 15 and 16. The BMC's RAKP 2 HMAC proves it knows
//     the password before anything is sent under the session; a mismatch
//     is reported to the BMC with a RAKP 3 carrying status 0x0F.
//   - lan (IPMI v1.5): Get Channel Authentication Capabilities, Get Session
//     Challenge, Activate Session and per-message MD5 auth codes (replies
//     are verified too), built on goipmi's message types. MD5 is required;
//     "none", MD2 and straight-password sessions are never used.
//
// The port (623 when 0), protocol, cipher suite (3 when 0) and privilege
// (administrator or operator; the session is raised to it with Set Session
// Privilege Level) come from drivers.BMC. goipmi supplies the command
// numbers, request and response types and completion codes.
//
// # Timeouts, retries, concurrency
//
// Every call is bounded by its context: a cancelled context ends a call
// within milliseconds (a Close Session is still sent, without waiting).
// Each request waits `timeout` for its reply and is sent again, with a new
// session sequence number, after a pause of `backoff` doubling up to
// `timeout`, at most `retries` times; then the call fails Transient ("did
// not answer"). A closed port (ICMP port unreachable) fails the same way,
// only faster. Calls to one BMC (address:port) run one at a time; at most
// `maxConcurrent` calls run at once over all BMCs (a call waiting between
// power polls gives its slot back). Each call opens and closes its own
// session, except in a session scope (drivers.WithSessionScope): there
// the calls to one BMC with the same credentials and context share one
// session, closed when the scope ends or a call fails.
//
// # Errors
//
// Credentials the BMC rejects are Permanent, *AuthError, "BMC HOST:PORT
// rejected the credentials for user NAME": over lanplus from RAKP 2's
// status (unknown user) or HMAC (wrong password), at once; over lan from
// Get Session Challenge (unknown user) or from an Activate Session that
// gets no reply after the challenge was answered, which is how a v1.5 BMC
// answers a wrong password (so it takes the retries). Bad settings in the
// BMC struct, a refused privilege, an unsupported cipher suite and
// completion codes other than busy/timeout are Permanent; no reply is
// Transient. No message carries the password.
//
// # Power cycle
//
// PowerCycle works from any state: off is powered on, on gets Chassis
// Control power cycle. It then polls Get Chassis Status every
// `pollInterval` until the machine is on again (seen off first, or a poll
// interval after the command, as some BMCs cycle faster than they are
// polled) and answers Done. If that takes longer than `powerWait` it
// answers InProgress, and the driver remembers the cycle: the next
// PowerCycle call keeps waiting for it instead of cycling again. A cycle
// not confirmed within `cycleTimeout` is Failed. PowerOn and PowerOff
// confirm the same way (InProgress after powerWait; a repeat is Done
// "already on/off").
package ipmi
