package queue

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunSetAdd(t *testing.T) {
	for _, tc := range []struct {
		name string
		adds []int64
		want runSet
	}{
		{"one", []int64{5}, runSet{{5, 6}}},
		{"join right", []int64{6, 5}, runSet{{5, 7}}},
		{"join left", []int64{5, 6}, runSet{{5, 7}}},
		{"join both", []int64{5, 7, 6}, runSet{{5, 8}}},
		{"apart", []int64{9, 5, 7}, runSet{{5, 6}, {7, 8}, {9, 10}}},
		{"again", []int64{5, 5}, runSet{{5, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s runSet
			for _, o := range tc.adds {
				s.add(o)
			}
			assert.Equal(t, tc.want, s)
		})
	}
}

// TestRunSetModel compares the set with a map under random adds, and the
// metadata encoding with its decoding.
func TestRunSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var s runSet
		model := map[int64]bool{}
		pos := int64(rng.IntN(1000))
		for range rng.IntN(300) {
			o := pos + 1 + int64(rng.IntN(400))
			assert.Equal(t, !model[o], s.add(o))
			model[o] = true
		}
		require.Equal(t, int64(len(model)), s.size(), "round %d", round)
		for o := pos; o < pos+402; o++ {
			_, ok := s.contains(o)
			require.Equal(t, model[o], ok, "round %d offset %d", round, o)
		}
		for i := 1; i < len(s); i++ {
			require.Less(t, s[i-1].hi, s[i].lo, "runs never touch")
		}
		got, err := decodeMeta(pos, encodeMeta(pos, s))
		require.NoError(t, err)
		if len(s) == 0 {
			assert.Empty(t, got)
		} else {
			assert.Equal(t, s, got)
		}
	}
}

// TestMetaSizeBound: a full window of alternating confirmed and open items
// (the worst case) encodes within the offsets store's default metadata
// limit.
func TestMetaSizeBound(t *testing.T) {
	var s runSet
	for o := int64(2); o < MaxWindow; o += 2 {
		s.add(o)
	}
	assert.LessOrEqual(t, len(encodeMeta(1, s)), 4096)
	var wide runSet
	for o := int64(1_000_000_000_002); o < 1_000_000_000_000+MaxWindow; o += 2 {
		wide.add(o)
	}
	assert.LessOrEqual(t, len(encodeMeta(1_000_000_000_001, wide)), 4096, "gaps are relative")
}

func FuzzDecodeMeta(f *testing.F) {
	for _, s := range []string{"", "q1", "q1 1+1", "q1 2+3 1+1", "q1 0+1", "q1 1+-1", "q1 9223372036854775807+1", "x"} {
		f.Add(int64(0), s)
	}
	f.Fuzz(func(t *testing.T, pos int64, meta string) {
		if pos < 0 {
			return
		}
		s, err := decodeMeta(pos, meta)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		prev := pos
		for _, r := range s {
			if r.lo <= prev || r.hi <= r.lo {
				t.Fatalf("decoded %q to bad runs %v", meta, s)
			}
			prev = r.hi
		}
		if again := encodeMeta(pos, s); meta != "" && again != meta {
			if back, err := decodeMeta(pos, again); err != nil || len(back) != len(s) {
				t.Fatalf("%q -> %v -> %q does not decode the same", meta, s, again)
			}
		}
	})
}
