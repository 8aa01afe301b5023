package feedbackloop

import (
	"crypto/sha256"
	"encoding/binary"
)

// unit maps key to a number in [0, 1), the same for the same key, so draws
// are reproducible per dialogue and independent of run order.
func unit(key string) float64 {
	h := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
}

// pick returns the index whose cumulative weight interval holds u (in [0,1)).
func pick(weights []float64, u float64) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	x := u * total
	last := 0
	for i, w := range weights {
		if w <= 0 {
			continue
		}
		last = i
		if x < w {
			return i
		}
		x -= w
	}
	return last
}
