package wire

import (
	"testing"
)

// BenchmarkCanonicalCodec measures writing and reading one record the way
// every transition does.
func BenchmarkCanonicalCodec(b *testing.B) {
	r := sampleRecords()[4]
	enc := Encode(r)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			Encode(r)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(enc, r.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
