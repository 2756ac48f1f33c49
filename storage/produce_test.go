package storage

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keysFor returns a key for each of the topic's first n partitions.
func keysFor(t *testing.T, s *Store, topic string, n int) [][]byte {
	t.Helper()
	keys := make([][]byte, n)
	for i, found := 0, 0; found < n; i++ {
		require.Less(t, i, 10000, "no key for every partition")
		k := []byte(fmt.Sprintf("key-%d", i))
		p, err := s.Partition(topic, k)
		require.NoError(t, err)
		if int(p) < n && keys[p] == nil {
			keys[p], found = k, found+1
		}
	}
	return keys
}

func TestProduceToAppendsEveryRecordToThePartitionAsked(t *testing.T) {
	s, err := OpenStore(t.TempDir(), StoreOptions{Log: small()})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateTopic("orders", 3, TopicConfig{}))
	keys := keysFor(t, s, "orders", 3)

	out, err := s.ProduceTo("orders", 2, Record{Key: keys[0], Value: []byte("a")}, Record{Value: []byte("b")}, Record{Key: keys[1], Value: []byte("c")})
	require.NoError(t, err)
	assert.Equal(t, []Produced{{2, 0}, {2, 1}, {2, 2}}, out)

	_, err = s.ProduceTo("orders", 3, Record{Value: []byte("x")})
	assert.ErrorIs(t, err, ErrInvalidPartition)
}

func TestProduceSaysWhichPartitionsTookTheirRecordsWhenOneFails(t *testing.T) {
	opts := small()
	opts.Limits.MaxBatchBytes = 4096
	s, err := OpenStore(t.TempDir(), StoreOptions{Log: opts})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateTopic("orders", 3, TopicConfig{}))
	keys := keysFor(t, s, "orders", 3)
	_, err = s.ProduceTo("orders", 1, Record{Value: []byte("earlier")})
	require.NoError(t, err)

	_, err = s.Produce("orders",
		Record{Key: keys[1], Value: []byte("a")},
		Record{Key: keys[1], Value: []byte("b")},
		Record{Key: keys[0], Value: make([]byte, 8192)},
		Record{Key: keys[2], Value: []byte("c")})
	var pe *ProduceError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, int32(0), pe.Partition)
	assert.Equal(t, 1, pe.Records)
	assert.Equal(t, []Appended{{Partition: 1, FirstOffset: 1, Records: 2}}, pe.Appended)
	for p, want := range []int64{0, 3, 0} {
		l, err := s.Log("orders", int32(p))
		require.NoError(t, err)
		assert.Equal(t, want, l.EndOffset(), "partition %d", p)
	}
}
