package segment

import "testing"

// BenchmarkFormatVerify: the check of a whole 100-record batch of 1 KiB
// records (header and checksum) that every append of a producer's batch
// and every read of one from disk pays. Written against API every batch
// format has had, to compare binaries of two versions.
func BenchmarkFormatVerify(b *testing.B) {
	batch, err := AppendBatch(nil, benchRecords(), EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		if _, err := Verify(batch, DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}
