package bmc

// MD2 (RFC 1319), needed only for the IPMI v1.5 "MD2" authentication type.
// Neither the Go standard library nor golang.org/x/crypto provide it.

// md2S is the RFC 1319 substitution table, a permutation of 0..255 derived
// from the digits of pi (TestMD2TableFromPi re-derives it).
var md2S = [256]byte{
	41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
	98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
	30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
	190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
	169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
	128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
	255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
	79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
	69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
	27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
	85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
	44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
	106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
	120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
	242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
	49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
}

// md2Sum returns the MD2 digest of the concatenation of parts.
func md2Sum(parts ...[]byte) [16]byte {
	var msg []byte
	for _, p := range parts {
		msg = append(msg, p...)
	}
	// Step 1: pad to a multiple of 16 bytes with n bytes of value n (1..16).
	n := 16 - len(msg)%16
	for i := 0; i < n; i++ {
		msg = append(msg, byte(n))
	}
	// Step 2: append the 16-byte checksum.
	var c [16]byte
	var l byte
	for i := 0; i < len(msg); i += 16 {
		for j := 0; j < 16; j++ {
			c[j] ^= md2S[msg[i+j]^l]
			l = c[j]
		}
	}
	msg = append(msg, c[:]...)
	// Steps 3-4: process the 16-byte blocks through the 48-byte state.
	var x [48]byte
	for i := 0; i < len(msg); i += 16 {
		for j := 0; j < 16; j++ {
			x[16+j] = msg[i+j]
			x[32+j] = x[16+j] ^ x[j]
		}
		var t byte
		for j := 0; j < 18; j++ {
			for k := 0; k < 48; k++ {
				x[k] ^= md2S[t]
				t = x[k]
			}
			t += byte(j)
		}
	}
	var out [16]byte
	copy(out[:], x[:16])
	return out
}
