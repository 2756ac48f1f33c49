package index

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func fuzzSeeds(f *testing.F, size int) {
	f.Add([]byte{}, int64(0))
	f.Add(make([]byte, size), int64(testBase))
	f.Add(make([]byte, size+1), int64(0))
	f.Add(rawOffset([2]uint32{10, 4096}, [2]uint32{20, 8192}, [2]uint32{30, 12288}), int64(testBase))
	f.Add(rawOffset([2]uint32{30, 4096}, [2]uint32{20, 8192}, [2]uint32{0, 0}, [2]uint32{40, 1}), int64(5))
	f.Add(rawTime(rawTimeEntry{-5, 1}, rawTimeEntry{7, 2}, rawTimeEntry{math.MaxInt64, math.MaxUint32}), int64(testBase))
	f.Add(rawTime(rawTimeEntry{7, 2}, rawTimeEntry{-5, 1}), int64(math.MaxInt64-10))
	f.Add(bytes.Repeat([]byte{0xff}, 97), int64(1))
}

// fuzzFile writes data to two files, one to open read-only and a copy to
// open writable.
func fuzzFile(t *testing.T, data []byte) (ro, rw string) {
	dir := t.TempDir()
	ro, rw = filepath.Join(dir, "ro"), filepath.Join(dir, "rw")
	if err := os.WriteFile(ro, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rw, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return ro, rw
}

func checkUnchanged(t *testing.T, path string, data []byte) {
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read-only open changed the file")
	}
}

// fuzzIndex opens data as an index of kind k with base offset base (made
// non-negative), read-only and writable: nothing panics, the read-only
// file is untouched, and the decoder agrees with the mapping. ro and rw
// call the methods whose arguments differ between the kinds.
func fuzzIndex[E entry, X testIndex[E]](t *testing.T, k kind[E, X], data []byte, base int64, ro func(x X, base int64, decoded []E), rw func(x X, base int64)) {
	if base < 0 {
		base = -(base + 1)
	}
	rof, rwf := fuzzFile(t, data)
	x, err := k.open(rof, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	decoded, derr := k.decode(data, base)
	if (derr != nil) != (len(data)%k.size != 0) || len(decoded) != x.Len() {
		t.Fatalf("decoded %d entries (err %v), index has %d", len(decoded), derr, x.Len())
	}
	for i, e := range decoded {
		if x.Entry(i) != e {
			t.Fatalf("entry %d: %v, decoded %v", i, x.Entry(i), e)
		}
	}
	ro(x, base, decoded)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, rof, data)

	// Followed: a copy of the entries before an all-zero one (the file
	// is another process's, being written): a prefix of the file's.
	whole, _ := k.decode(data[:len(data)-len(data)%k.size], base)
	z, err := k.open(rof, base, Options{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	if z.Len() > len(whole) {
		t.Fatalf("followed copy has %d entries, the file %d", z.Len(), len(whole))
	}
	for i := range z.Len() {
		if z.Entry(i) != whole[i] {
			t.Fatalf("followed entry %d: %v, decoded %v", i, z.Entry(i), whole[i])
		}
	}
	ro(z, base, whole[:z.Len()])
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, rof, data)

	y, err := k.open(rwf, base, Options{Writable: true, MaxBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	rw(y, base)
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
}

// FuzzOpenOffset runs fuzzIndex on offset indexes.
func FuzzOpenOffset(f *testing.F) {
	fuzzSeeds(f, OffsetEntrySize)
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		fuzzIndex(t, offsetKind, data, base, func(x *OffsetIndex, base int64, decoded []OffsetPosition) {
			_ = x.SanityCheck(int64(len(data)))
			_ = x.SanityCheck(math.MaxInt64)
			for _, target := range []int64{0, base - 1, base, base + 10, base + 1<<20, math.MaxInt64} {
				_ = x.Lookup(target)
			}
			for _, e := range decoded {
				_ = x.Lookup(e.Offset)
			}
			_, _ = x.Last()
		}, func(y *OffsetIndex, base int64) {
			_ = y.SanityCheck(math.MaxInt64)
			_ = y.Lookup(base + 100)
			if e, ok := y.Last(); ok {
				_ = y.Append(e.Offset+1, e.Position+1)
				_ = y.TruncateTo(e.Offset)
			} else {
				_ = y.Append(base+1, 1)
			}
		})
	})
}

// FuzzOpenTime runs fuzzIndex on time indexes.
func FuzzOpenTime(f *testing.F) {
	fuzzSeeds(f, TimeEntrySize)
	f.Fuzz(func(t *testing.T, data []byte, base int64) {
		fuzzIndex(t, timeKind, data, base, func(x *TimeIndex, base int64, decoded []TimeOffset) {
			_ = x.SanityCheck(base, base+int64(len(data)))
			_ = x.SanityCheck(0, math.MaxInt64)
			for _, target := range []int64{math.MinInt64, -1, 0, 1, 1 << 40, math.MaxInt64} {
				_, _ = x.Lookup(target)
			}
			for _, e := range decoded {
				_, _ = x.Lookup(e.Timestamp)
			}
		}, func(y *TimeIndex, base int64) {
			_ = y.SanityCheck(0, math.MaxInt64)
			if e, ok := y.Last(); ok {
				_ = y.Append(e.Timestamp+1, e.Offset+1)
				_ = y.TruncateTo(e.Offset)
			} else {
				_ = y.Append(1, base)
			}
		})
	})
}
