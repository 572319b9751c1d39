package bmc

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"hash"
)

// RMCP+ algorithm numbers (IPMI v2.0 tables 13-17 to 13-19).
const (
	rakpNone       = 0x00
	rakpHMACSHA1   = 0x01
	rakpHMACMD5    = 0x02
	rakpHMACSHA256 = 0x03

	integNone          = 0x00
	integHMACSHA1_96   = 0x01
	integHMACMD5_128   = 0x02
	integHMACSHA256128 = 0x04

	confNone      = 0x00
	confAESCBC128 = 0x01
)

// cipherSuite is one standard cipher suite (IPMI v2.0 table 22-20).
type cipherSuite struct {
	id, auth, integ, conf byte
}

// cipherSuites lists the suites the BMC offers, in Get Channel Cipher Suites
// order. Suite 0 is offered only with Options.AllowCipherZero.
var cipherSuites = []cipherSuite{
	{0, rakpNone, integNone, confNone},
	{1, rakpHMACSHA1, integNone, confNone},
	{2, rakpHMACSHA1, integHMACSHA1_96, confNone},
	{3, rakpHMACSHA1, integHMACSHA1_96, confAESCBC128},
	{6, rakpHMACMD5, integNone, confNone},
	{7, rakpHMACMD5, integHMACMD5_128, confNone},
	{8, rakpHMACMD5, integHMACMD5_128, confAESCBC128},
	{15, rakpHMACSHA256, integNone, confNone},
	{16, rakpHMACSHA256, integHMACSHA256128, confNone},
	{17, rakpHMACSHA256, integHMACSHA256128, confAESCBC128},
}

func (b *BMC) suites() []cipherSuite {
	if b.opts.AllowCipherZero {
		return cipherSuites
	}
	return cipherSuites[1:]
}

func (b *BMC) findSuite(auth, integ, conf byte) (cipherSuite, bool) {
	for _, s := range b.suites() {
		if s.auth == auth && s.integ == integ && s.conf == conf {
			return s, true
		}
	}
	return cipherSuite{}, false
}

func rakpHash(alg byte) func() hash.Hash {
	switch alg {
	case rakpHMACSHA1:
		return sha1.New
	case rakpHMACMD5:
		return md5.New
	case rakpHMACSHA256:
		return sha256.New
	}
	return nil
}

// rakpHMAC is the HMAC of the authentication algorithm; nil for RAKP-none.
func rakpHMAC(alg byte, key []byte, parts ...[]byte) []byte {
	h := rakpHash(alg)
	if h == nil {
		return nil
	}
	m := hmac.New(h, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// rakpICVLen is the length of the RAKP 4 integrity check value: the
// authentication HMAC truncated as the matching integrity algorithm is.
func rakpICVLen(alg byte) int {
	switch alg {
	case rakpHMACSHA1:
		return 12
	case rakpHMACMD5, rakpHMACSHA256:
		return 16
	}
	return 0
}

// cipherState holds a session's negotiated algorithms and keys.
type cipherState struct {
	auth, integ, conf byte
	k1, k2            []byte
}

// deriveKeys computes K1 and K2 from the session integrity key (IPMI v2.0
// section 13.32): K_n = HMAC_SIK(constant_n), the constant being 20 bytes of
// value n whatever the algorithm (ipmitool does the same for HMAC-SHA256).
func (c *cipherState) deriveKeys(sik []byte) {
	if c.auth == rakpNone {
		return
	}
	c.k1 = rakpHMAC(c.auth, sik, bytes.Repeat([]byte{1}, 20))
	c.k2 = rakpHMAC(c.auth, sik, bytes.Repeat([]byte{2}, 20))
}

func (c *cipherState) integrityLen() int {
	switch c.integ {
	case integHMACSHA1_96:
		return 12
	case integHMACMD5_128, integHMACSHA256128:
		return 16
	}
	return 0
}

// integrityMAC is the session trailer's AuthCode over data (auth type byte
// through next header byte).
func (c *cipherState) integrityMAC(data []byte) []byte {
	var h func() hash.Hash
	switch c.integ {
	case integHMACSHA1_96:
		h = sha1.New
	case integHMACMD5_128:
		h = md5.New
	case integHMACSHA256128:
		h = sha256.New
	default:
		return nil
	}
	m := hmac.New(h, c.k1)
	m.Write(data)
	return m.Sum(nil)[:c.integrityLen()]
}

// checkTrailer verifies the integrity trailer of an authenticated packet.
func (c *cipherState) checkTrailer(p *v20Packet) bool {
	n := c.integrityLen()
	raw := p.raw
	end := len(raw) - n
	if end-2 < p.payloadEnd {
		return false
	}
	padLen := int(raw[end-2])
	if raw[end-1] != rmcpClassIPMI || p.payloadEnd+padLen+2 != end {
		return false
	}
	return hmac.Equal(c.integrityMAC(raw[rmcpHeaderLen:end]), raw[end:])
}

// encrypt applies AES-CBC-128 (IPMI v2.0 section 13.29): a random IV, then
// the payload, pad bytes 1, 2, 3..., and the pad length, encrypted with the
// first 16 bytes of K2.
func (c *cipherState) encrypt(p []byte) []byte {
	n := (aes.BlockSize - (len(p)+1)%aes.BlockSize) % aes.BlockSize
	plain := append([]byte(nil), p...)
	for i := 1; i <= n; i++ {
		plain = append(plain, byte(i))
	}
	plain = append(plain, byte(n))
	out := make([]byte, aes.BlockSize+len(plain))
	if _, err := rand.Read(out[:aes.BlockSize]); err != nil {
		panic(err)
	}
	blk, err := aes.NewCipher(c.k2[:16])
	if err != nil {
		panic(err)
	}
	cipher.NewCBCEncrypter(blk, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], plain)
	return out
}

func (c *cipherState) decrypt(p []byte) ([]byte, bool) {
	if len(p) < 2*aes.BlockSize || len(p)%aes.BlockSize != 0 {
		return nil, false
	}
	blk, err := aes.NewCipher(c.k2[:16])
	if err != nil {
		return nil, false
	}
	plain := make([]byte, len(p)-aes.BlockSize)
	cipher.NewCBCDecrypter(blk, p[:aes.BlockSize]).CryptBlocks(plain, p[aes.BlockSize:])
	n := int(plain[len(plain)-1])
	if n >= aes.BlockSize || n+1 > len(plain) {
		return nil, false
	}
	return plain[:len(plain)-1-n], true
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}
