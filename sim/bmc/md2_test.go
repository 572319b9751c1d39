package bmc

import (
	"encoding/hex"
	"math/big"
	"testing"
)

func TestMD2Vectors(t *testing.T) {
	// RFC 1319 appendix A.5 test suite.
	for in, want := range map[string]string{
		"":                           "8350e5a3e24c153df2275c9f80692773",
		"a":                          "32ec01ec4a6dac72c0ab96fb34c0b5d1",
		"abc":                        "da853b0d3f88d99b30283a69e6ded6bb",
		"message digest":             "ab4f496bfb2a530b219ff33031fe06b0",
		"abcdefghijklmnopqrstuvwxyz": "4e8ddff3650292ab5a4108c3aa47940b",
		"12345678901234567890123456789012345678901234567890123456789012345678901234567890": "d5976f79d83d3a0dc9806c3c66f3efd8",
	} {
		got := md2Sum([]byte(in))
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("md2(%q) = %x, want %s", in, got, want)
		}
	}
	// Split input gives the same digest.
	a, b := md2Sum([]byte("message "), []byte("digest")), md2Sum([]byte("message digest"))
	if a != b {
		t.Errorf("split input: %x != %x", a, b)
	}
}

// TestMD2TableFromPi re-derives the MD2 substitution table from the digits of
// pi, the construction RFC 1319 names as its source.
func TestMD2TableFromPi(t *testing.T) {
	const n = 1000
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(n+20), nil)
	arctanInv := func(x int64) *big.Int { // arctan(1/x) * scale
		sum, xx := new(big.Int), big.NewInt(x*x)
		term := new(big.Int).Div(scale, big.NewInt(x))
		for k, sign := int64(1), 1; term.Sign() != 0; k, sign = k+2, -sign {
			q := new(big.Int).Div(term, big.NewInt(k))
			if sign > 0 {
				sum.Add(sum, q)
			} else {
				sum.Sub(sum, q)
			}
			term.Div(term, xx)
		}
		return sum
	}
	pi := new(big.Int).Mul(big.NewInt(16), arctanInv(5))
	pi.Sub(pi, new(big.Int).Mul(big.NewInt(4), arctanInv(239)))
	digits := pi.String()[:n]
	pos := 0
	next := func() int { d := int(digits[pos] - '0'); pos++; return d }
	random := func(m int) int { // uniform in [0, m) from the next pi digits
		for {
			x, y := next(), 10
			if m > 10 {
				x, y = x*10+next(), 100
			}
			if m > 100 {
				x, y = x*10+next(), 1000
			}
			if x < m*(y/m) {
				return x % m
			}
		}
	}
	var s [256]byte
	for i := range s {
		s[i] = byte(i)
	}
	for i := 2; i <= 256; i++ {
		j := random(i)
		s[j], s[i-1] = s[i-1], s[j]
	}
	if s != md2S {
		t.Fatalf("derived table differs:\n%v\n%v", s, md2S)
	}
}
