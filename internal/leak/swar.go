package leak

import "math/bits"

// Eight bytes at a time ("SIMD within a register"): the scanners ask
// which of eight text bytes are word bytes or white space in a few
// arithmetic operations instead of a table load and a hard-to-predict
// branch per byte. Each mask has the top bit of every byte that is in the
// class set, and nothing else.

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
	lw8 = 0x7F7F7F7F7F7F7F7F
)

// wordMask marks the ASCII word bytes of v (letters, digits, '_': the
// bytes of wordByte); bytes from 0x80 are never marked. Written out flat
// so the compiler inlines it: with x = v's bytes below 0x80, x+(0x80-lo)
// sets a byte's top bit when x >= lo, x+(0x7F-hi) when x > hi, and no
// byte carries into the next.
func wordMask(v uint64) uint64 {
	x := v & lw8
	y := x | 0x2020202020202020                              // letters lowercased
	z := x ^ 0x5F5F5F5F5F5F5F5F                              // '_' becomes 0
	return ((y+0x1F1F1F1F1F1F1F1F)&^(y+0x0505050505050505) | // 'a'..'z'
		(x+0x5050505050505050)&^(x+0x4646464646464646) | // '0'..'9'
		^((z&lw8 + lw8) | z)) &^ v & hi8 // '_'
}

// spaceMask marks the ASCII white-space bytes of v (those of asciiSpace:
// ' ', '\t', '\n', '\v', '\f', '\r'); bytes from 0x80 are never marked.
func spaceMask(v uint64) uint64 {
	x := v & lw8
	z := x ^ 0x2020202020202020                              // ' ' becomes 0
	return ((x+0x7777777777777777)&^(x+0x7272727272727272) | // '\t'..'\r'
		^((z&lw8 + lw8) | z)) &^ v & hi8 // ' '
}

// firstByte is the index of the first marked byte of a non-zero mask.
func firstByte(m uint64) int { return bits.TrailingZeros64(m) >> 3 }
