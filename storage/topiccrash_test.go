package storage

import (
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTopicOpsPowerCut cuts the power at every disk-changing operation of
// a CreateTopic, an AlterTopic and a CreateTopic that adds partitions, in
// strict and lazy mode. After the reopen, a topic that is there has, in
// every partition directory, the configuration the store reports for it,
// which is the old one or the new one (never the store's defaults in
// place of a configuration it was created with); and the client's retry of
// the interrupted call leaves every partition with the new one.
func TestTopicOpsPowerCut(t *testing.T) {
	oldCfg := TopicConfig{RetentionBytes: 1 << 20}
	newCfg := TopicConfig{RetentionAge: 3600e9, RetentionConsumed: true}
	cases := []struct {
		name  string
		setup func(s *Store) error // before the call the power cut interrupts
		call  func(s *Store) error
		parts int          // partitions after the call
		was   *TopicConfig // the configuration before the call (nil: no topic)
		want  TopicConfig  // after it
	}{
		{"create", func(*Store) error { return nil }, func(s *Store) error { return s.CreateTopic("t", 3, newCfg) }, 3, nil, newCfg},
		{"alter", func(s *Store) error { return s.CreateTopic("t", 3, oldCfg) }, func(s *Store) error { return s.AlterTopic("t", newCfg) }, 3, &oldCfg, newCfg},
		{"alter-to-defaults", func(s *Store) error { return s.CreateTopic("t", 3, oldCfg) }, func(s *Store) error { return s.AlterTopic("t", TopicConfig{}) }, 3, &oldCfg, TopicConfig{}},
		{"add-partitions", func(s *Store) error { return s.CreateTopic("t", 1, oldCfg) }, func(s *Store) error { return s.CreateTopic("t", 3, oldCfg) }, 3, &oldCfg, oldCfg},
	}
	for _, tc := range cases {
		for _, mode := range []crashfs.Mode{crashfs.Strict, crashfs.Lazy} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				for k := int64(1); ; k++ {
					root := t.TempDir()
					fsys, err := crashfs.New(root, crashfs.Options{Mode: mode, Seed: uint64(k)})
					require.NoError(t, err)
					s, err := OpenStore(root, StoreOptions{Log: Options{FS: fsys}})
					require.NoError(t, err)
					require.NoError(t, tc.setup(s))
					s, done := cutDuring(t, fsys, s, root, k, tc.call)
					n, err := s.Partitions("t")
					if tc.was == nil && !done {
						if err != nil {
							require.ErrorIs(t, err, ErrUnknownTopic)
						}
					} else {
						require.NoError(t, err, "crash at operation %d", k)
					}
					if n > 0 {
						cfg, err := s.TopicConfig("t")
						require.NoError(t, err)
						switch {
						case done:
							assert.Equal(t, tc.want, cfg, "crash at operation %d: the call returned", k)
						case tc.was != nil && cfg != tc.want:
							assert.Equal(t, *tc.was, cfg, "crash at operation %d: the old configuration or the new", k)
						case tc.was == nil:
							assert.Equal(t, tc.want, cfg, "crash at operation %d: a topic created with a configuration has it", k)
						}
						for p := int32(0); p < int32(n); p++ {
							partitionLog(t, s, "t", p) // an open repairs a partition's copy
							got, err := ReadTopicConfig(filepath.Join(root, PartitionDir("t", p)))
							require.NoError(t, err)
							assert.Equal(t, cfg, got, "crash at operation %d: partition %d holds another configuration than the topic's", k, p)
						}
					}
					// The client retries.
					require.NoError(t, tc.call(s), "crash at operation %d: retry", k)
					n, err = s.Partitions("t")
					require.NoError(t, err)
					assert.Equal(t, tc.parts, n)
					for p := int32(0); p < int32(n); p++ {
						got, err := ReadTopicConfig(filepath.Join(root, PartitionDir("t", p)))
						require.NoError(t, err)
						assert.Equal(t, tc.want, got, "crash at operation %d: after the retry, partition %d", k, p)
					}
					require.NoError(t, s.Close())
					if done {
						return
					}
				}
			})
		}
	}
}
