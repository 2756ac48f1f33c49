package broker

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// What the broker keeps in the data directory beside the engine's files,
// in Kafka's own file formats:
//
//	<root>/meta.properties                 version=1, cluster.id, node.id, and the
//	                                       end of the last producer id block handed out
//	<root>/<topic>-<n>/partition.metadata  version: 0, topic_id: the topic's id
//
// Both are replaced atomically (temporary file, fsync, rename, directory
// fsync). The engine leaves files it does not know alone. A topic without
// partition.metadata (created by `seglog topics create`, or before the
// broker first ran) gets an id the first time the broker sees it.

const (
	metaFile          = "meta.properties"
	partitionMetaFile = storage.KafkaPartitionMetadataFile
	metaFileLimit     = 4 << 10
	// producerIDBlock is how many producer ids one durable write of
	// meta.properties hands out.
	producerIDBlock = 1000
)

// errBadMeta is wrapped by errors about a meta.properties or
// partition.metadata that does not parse.
var errBadMeta = errors.New("broker: malformed metadata file")

// uuid is a Kafka UUID (topic ids).
type uuid = [16]byte

type clusterMeta struct {
	store     *storage.Store
	root      string
	clusterID string
	nodeID    int32

	// mu guards the maps, the producer id counters and the files.
	mu      sync.Mutex
	ids     map[string]uuid // topic → id
	names   map[uuid]string // id → topic
	nextPID int64           // next producer id to hand out
	pidEnd  int64           // end of the block written to meta.properties
}

func newUUID() (uuid, error) {
	var u uuid
	for {
		if _, err := rand.Read(u[:]); err != nil {
			return u, err
		}
		// Kafka reserves the zero id and the metadata topic's (0...01).
		if u != (uuid{}) && u != (uuid{15: 1}) {
			return u, nil
		}
	}
}

func encodeUUID(u uuid) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

func decodeUUID(s string) (uuid, bool) {
	var u uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, false
	}
	copy(u[:], b)
	return u, u != uuid{}
}

// parseProperties reads key=value (or "key: value") lines; # starts a
// comment.
func parseProperties(b []byte, sep string) (map[string]string, bool) {
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, sep)
		if !ok {
			return nil, false
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, true
}

// openClusterMeta reads meta.properties (creating it on first run) and the
// topic ids.
func openClusterMeta(store *storage.Store) (*clusterMeta, error) {
	m := &clusterMeta{store: store, root: store.Root(), ids: map[string]uuid{}, names: map[uuid]string{}}
	path := filepath.Join(m.root, metaFile)
	b, err := vfs.ReadFile(vfs.Default, path, metaFileLimit)
	switch {
	case errors.Is(err, os.ErrNotExist):
		id, err := newUUID()
		if err != nil {
			return nil, fmt.Errorf("broker: cluster id: %w", err)
		}
		m.clusterID = encodeUUID(id)
		if err := m.writeMetaLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("broker: read %s: %w", path, err)
	default:
		props, ok := parseProperties(b, "=")
		node, nerr := strconv.ParseInt(props["node.id"], 10, 32)
		pid, perr := strconv.ParseInt(props["producer.id.block.end"], 10, 64)
		if !ok || props["cluster.id"] == "" || nerr != nil || node < 0 || props["producer.id.block.end"] != "" && (perr != nil || pid < 0) {
			return nil, fmt.Errorf("%w: %s", errBadMeta, path)
		}
		m.clusterID, m.nodeID, m.nextPID, m.pidEnd = props["cluster.id"], int32(node), pid, pid
	}
	for _, t := range store.Topics() {
		if _, err := m.topicID(t.Name); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *clusterMeta) writeMetaLocked() error {
	data := fmt.Sprintf("#seglog broker\nversion=1\ncluster.id=%s\nnode.id=%d\nproducer.id.block.end=%d\n", m.clusterID, m.nodeID, m.pidEnd)
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(m.root, metaFile), []byte(data), vfs.DefaultFileMode); err != nil {
		return fmt.Errorf("broker: write %s: %w", metaFile, err)
	}
	return nil
}

// topicID returns a topic's id, reading it from the topic's first
// partition directory, or giving it one (written into every partition
// directory) when it has none.
func (m *clusterMeta) topicID(topic string) (uuid, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.ids[topic]; ok {
		return id, nil
	}
	n, err := m.store.Partitions(topic)
	if err != nil {
		return uuid{}, err
	}
	b, err := vfs.ReadFile(vfs.Default, filepath.Join(m.root, storage.PartitionDir(topic, 0), partitionMetaFile), metaFileLimit)
	if err == nil {
		props, ok := parseProperties(b, ":")
		if id, idOK := decodeUUID(props["topic_id"]); ok && idOK && m.names[id] == "" {
			m.ids[topic], m.names[id] = id, topic
			return id, nil
		}
		// Unreadable, or another topic's (a directory copied by hand):
		// a new id.
	} else if !errors.Is(err, os.ErrNotExist) {
		return uuid{}, fmt.Errorf("broker: topic %s: %w", topic, err)
	}
	id, err := newUUID()
	if err != nil {
		return uuid{}, err
	}
	data := []byte("version: 0\ntopic_id: " + encodeUUID(id) + "\n")
	for p := range int32(n) {
		path := filepath.Join(m.root, storage.PartitionDir(topic, p), partitionMetaFile)
		if err := vfs.WriteFileAtomic(vfs.Default, path, data, vfs.DefaultFileMode); err != nil {
			return uuid{}, fmt.Errorf("broker: topic %s: write topic id: %w", topic, err)
		}
	}
	m.ids[topic], m.names[id] = id, topic
	return id, nil
}

// topicByID returns the topic an id names.
func (m *clusterMeta) topicByID(id uuid) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.names[id]
	return t, ok
}

// forget drops a deleted topic's id.
func (m *clusterMeta) forget(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.ids[topic]; ok {
		delete(m.names, id)
		delete(m.ids, topic)
	}
}

// newProducerID hands out a producer id never handed out before by this
// data directory: ids come in blocks whose end is durable in
// meta.properties before the first of them is used.
func (m *clusterMeta) newProducerID() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nextPID >= m.pidEnd {
		m.pidEnd = m.nextPID + producerIDBlock
		if err := m.writeMetaLocked(); err != nil {
			m.pidEnd = m.nextPID
			return 0, err
		}
	}
	id := m.nextPID
	m.nextPID++
	return id, nil
}
