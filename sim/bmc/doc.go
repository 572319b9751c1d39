// Package bmc is the virtual lab's simulated baseboard management
// controller: IPMI over LAN (RMCP on UDP), one BMC per simulated machine,
// all in one process. Real clients talk to it: ipmitool -I lan and
// -I lanplus, FreeIPMI's tools over -D LAN and -D LAN_2_0 (ipmiconsole
// included; freeipmi_test.go), and github.com/vmware/goipmi's native
// "lan" transport.
//
// # Transports
//
// One UDP socket per BMC carries three kinds of datagram, told apart by the
// RMCP class and the session header's first byte:
//
//   - ASF Presence Ping (RMCP class 6) is answered with a Pong that
//     announces IPMI (goipmi pings before it opens a session). RMCP ACKs are
//     never sent.
//   - IPMI v1.5 sessions (class 7, auth type 0, 1, 2 or 4). Authentication
//     types offered: MD2, MD5 and straight password. "None" is offered
//     only with Options.AllowCipherZero (ipmi_sim's lan.conf example allows
//     none md2 md5 straight; here "none", which checks no password, is
//     opt-in like cipher suite 0). Every message of a session must carry its
//     auth code (per-message authentication is on; replies carry one too).
//     Passwords are cut to 16 bytes, the most v1.5 can carry.
//   - IPMI v2.0 / RMCP+ sessions (class 7, auth type 6): Open Session,
//     RAKP 1-4, then IPMI payloads. Cipher suites offered (and answered by
//     Get Channel Cipher Suites, which ipmitool sends when given no -C):
//     1, 2, 3 (HMAC-SHA1 / HMAC-SHA1-96 / AES-CBC-128), 6, 7, 8 (HMAC-MD5 /
//     HMAC-MD5-128 / AES-CBC-128), 15, 16, 17 (HMAC-SHA256 / HMAC-SHA256-128
//     / AES-CBC-128), and 0 (no authentication at all) only with
//     Options.AllowCipherZero. Not offered: 11 and 12 (MD5-128 integrity),
//     xRC4 confidentiality, OEM suites. Any other combination proposed in
//     Open Session gets status 0x11 (no cipher suite match), or 0x04/0x10
//     for an unknown authentication/confidentiality algorithm.
//
// # RMCP+ details
//
// There is one user, Options.Username, with administrator privilege, and no
// BMC key: K_G is the user key (password NUL-padded to 20 bytes). The RAKP
// HMACs, SIK, K1 = HMAC_SIK(20 x 0x01) and K2 = HMAC_SIK(20 x 0x02) follow
// IPMI v2.0 section 13.31-13.32; the 20-byte constants are used for
// HMAC-SHA256 too (as ipmitool does). RAKP 4's check value is truncated to
// 12 bytes (SHA1) or 16 (MD5, SHA256). The RAKP 2 GUID is Options.GUID,
// which Get System GUID also returns. AES-CBC-128 uses K2's first 16 bytes,
// a random IV per packet and the 1, 2, 3... pad of section 13.29; the
// integrity pad makes auth type through next header a multiple of 4 bytes.
// The role byte's name-only-lookup bit is accepted either way.
//
// # Rejecting credentials
//
// What a real BMC does, and what clients then see:
//
//   - lanplus, unknown user name: RAKP 2 with status 0x0D (unauthorized
//     name); ipmitool exits 1, "Unable to establish IPMI v2 / RMCP+
//     session", in about 50 ms.
//   - lanplus, wrong password: RAKP 2 is sent normally; its HMAC, keyed
//     with the BMC's password, does not match the console's, and ipmitool
//     quits right there (same message, ~50 ms) without sending RAKP 3, so
//     the BMC only sees a handshake that never finishes
//     (Stats.HandshakesAbandoned, after 10 s). A console that does send
//     RAKP 3 with a wrong HMAC gets RAKP 4 with status 0x0F (invalid
//     integrity check value); a RAKP 3 that carries an error status ends the
//     handshake without reply.
//   - lan (v1.5), unknown user name: Get Session Challenge answers
//     completion code 0x81 (invalid user name; 0x82 for an empty name):
//     ipmitool prints "Invalid user name" and exits 1; goipmi's Open returns
//     CompletionCode 0x81. Both at once.
//   - lan (v1.5), wrong password: Activate Session's auth code does not
//     verify and the packet is dropped without a reply, as ipmi_sim does and
//     as the spec says for messages that fail authentication. The client
//     times out: ipmitool -R 1 -N 1 fails after about 1 s ("Activate Session
//     command failed"), goipmi after its fixed 5 s read timeout.
//
// # Sessions
//
// Up to 64 sessions and handshakes per BMC, any number of them concurrent;
// each ends with Close Session or after 60 s without a valid packet
// (unfinished handshakes after 10 s). Sessions start at User privilege; Set
// Session Privilege Level raises them up to the maximum requested when
// activating (ipmitool and goipmi always raise to administrator). Chassis
// Control, Chassis Identify and Set/Get System Boot Options need Operator
// and answer 0xD4 below it. Inbound session sequence numbers are checked
// loosely: within 32 of the highest seen, replays included. A packet with a
// bad auth code, a wrong integrity trailer, a sequence number out of that
// window or for an unknown session is dropped silently. A request
// retransmitted while the original is still executing (slow Chassis) is
// dropped: the original's reply answers both.
//
// # Commands
//
// App (NetFn 06): Get Device ID (device 0x20, revision 1, firmware 1.00,
// IPMI 2.0, chassis device, manufacturer 0, product 1), Get Self Test
// Results (passed), Get System GUID, Get Channel Authentication
// Capabilities, Get Session Challenge, Activate Session, Set Session
// Privilege Level, Close Session, Get Channel Cipher Suites.
//
// Chassis (NetFn 00): Get Chassis Status (power state, restore policy
// "previous", last power event "IPMI command" once one was given), Chassis
// Control (0 power down, 1 power up, 2 power cycle, 3 hard reset, 4 pulse
// diagnostic interrupt (no-op), 5 soft shutdown = PowerOff if on), Chassis
// Identify (no-op), Set System Boot Options (parameter 0 set-in-progress, 3
// valid bit clearing and 4 boot info acknowledge are stored and answered
// with success; parameter 5 boot flags: valid bit 0x80, persistent 0x40,
// EFI 0x20, device selector pxe 0x04, disk 0x08, cdrom 0x14, bios 0x18,
// none 0x00, others 0xCC; flags without the valid bit mean "none"), Get
// System Boot Options (parameters 0, 3, 4, 5; parameter 5 is read back from
// Chassis.BootDevice).
//
// Session-less, only Get Channel Authentication Capabilities, Get Channel
// Cipher Suites (in either framing) and Get Session Challenge (v1.5) are
// answered; ipmi_sim drops pre-session Get Channel Cipher Suites, which
// makes ipmitool without -C wait ~10 s per call there; here it is answered.
// Any other command answers 0xC1 (invalid command); unsupported boot
// parameters 0x80. The inventory commands operators' tools ask (SDR,
// sensors, SEL, FRU, users, channel, LAN and SOL parameters) are in
// inventory*.go. Serial over LAN (sol.go): Activate, Deactivate and Get
// Payload Activation Status for SOL instance 1, when Options.Serial is
// set; the machine's output goes to the activating console in SOL packets
// (1-15 sequence numbers, 7 retransmissions 500 ms apart until
// acknowledged), typed characters go to the port once and are
// acknowledged. Not supported: OEM payloads, bridging, configuration
// writes.
//
// # Concurrency and faults
//
// One goroutine reads the socket; each datagram is handled in its own
// goroutine (at most 256 at once, more are dropped). No lock is held while
// calling the Chassis, and a request's reply is sent when its Chassis call
// returns, so keep those calls well under the client's timeout (ipmitool's
// is 1 s by default with lanplus). Options.Unreachable drops every packet
// (received or about to be sent) while it returns true; Options.Latency
// delays every reply.
package bmc
