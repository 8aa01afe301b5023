package leak

import (
	"math/rand/v2"
	"testing"
)

// The masks agree with the byte tables on every byte value in every
// position, next to every kind of neighbour (a carry or borrow between
// bytes would show as a wrong neighbour).
func TestSWARMasks(t *testing.T) {
	isSpace := func(c byte) bool { return c < 0x80 && asciiSpace[c] }
	cases := []struct {
		name string
		mask func(uint64) uint64
		in   func(byte) bool
	}{
		{"word", wordMask, func(c byte) bool { return wordByte[c] }},
		{"space", spaceMask, isSpace},
	}
	neighbours := []byte{0, ' ', '_', 'a', 'Z', '0', 0x7F, 0x80, 0xFF, 0xDF, 0x5F}
	for _, c := range cases {
		for b := range 256 {
			for _, nb := range neighbours {
				for pos := range 8 {
					var v uint64
					for k := range 8 {
						x := nb
						if k == pos {
							x = byte(b)
						}
						v |= uint64(x) << (8 * k)
					}
					got := c.mask(v)
					for k := range 8 {
						x := byte(v >> (8 * k))
						if want := c.in(x); (got>>(8*k+7))&1 == 1 != want {
							t.Fatalf("%s mask of %016x: byte %d (%#x) marked %v, want %v", c.name, v, k, x, !want, want)
						}
					}
					if got&^hi8 != 0 {
						t.Fatalf("%s mask of %016x = %016x: bits outside the top bits", c.name, v, got)
					}
				}
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 200000 {
			v := r.Uint64()
			got := c.mask(v)
			for k := range 8 {
				x := byte(v >> (8 * k))
				if (got>>(8*k+7))&1 == 1 != c.in(x) {
					t.Fatalf("%s mask of %016x: byte %d (%#x) wrong", c.name, v, k, x)
				}
			}
		}
	}
}
