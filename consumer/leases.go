package consumer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Consumer-group leases on the data directory: how the consume processes
// of one group split a topic's partitions without a broker. Each process
// is a member while it holds an exclusive flock on a file of its own, and
// reads a partition while it holds the flock on the partition's file:
//
//	<dir>/consumer-leases/<hex of the group>/<topic>/
//	    members/<join time, ns, 20 digits>-<random>.lock   one per live process
//	    <partition>.lock                                    held by its reader
//
// Every LeaseInterval a process counts the live members (a member file
// whose flock it can take belongs to a process that is gone: it removes
// it), takes its share of the partitions (members sorted by join time;
// the first n mod m members get one more), releases the partitions over
// its share (highest first, after committing where it is) and takes free
// ones up to it. A process that exits or is killed loses its flocks with
// its file descriptors, so the others take its partitions over at their
// next look, from the group's committed offsets (at least once: a record
// printed but not yet committed is printed again).

// leasesDir is the directory of the leases in a data directory.
const leasesDir = "consumer-leases"

// LeaseInterval is how often a process of a group looks at the group's
// leases: the others take over the partitions of a process that is gone
// within about that long.
const LeaseInterval = 250 * time.Millisecond

// leases are one process's membership of a group's consumers of a topic
// and the partitions it holds.
type leases struct {
	dir    string // the group's directory for the topic
	n      int    // partitions
	id     string // this member's file name
	member *os.File
	held   map[int32]*os.File
}

// joinTries bounds how often joinLeases makes a new member file after
// another process took the last one for a dead member's.
const joinTries = 100

// beforeMemberLock, when set by a test, runs between the creation of a
// member file and its flock.
var beforeMemberLock func(path string)

// joinLeases makes this process a member of group's consumers of topic.
//
// A member file is unlocked from its creation to its flock: another
// process looking at the members then takes it for a dead member's and
// removes it. The file this process locked is therefore checked to still
// be the one at its path; if it is not, or the other still holds it, the
// process joins again under a new name. Once locked and in place, the
// file is never taken for a dead member's.
func joinLeases(root, group, topic string, n int) (*leases, error) {
	dir := filepath.Join(root, leasesDir, hex.EncodeToString([]byte(group)), topic)
	if err := os.MkdirAll(filepath.Join(dir, "members"), 0o750); err != nil {
		return nil, fmt.Errorf("consumer leases: %w", err)
	}
	for range joinTries {
		var r [4]byte
		rand.Read(r[:])
		id := fmt.Sprintf("%020d-%s.lock", time.Now().UnixNano(), hex.EncodeToString(r[:]))
		path := filepath.Join(dir, "members", id)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
		if err != nil {
			return nil, fmt.Errorf("consumer leases: join: %w", err)
		}
		if beforeMemberLock != nil {
			beforeMemberLock(path)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("consumer leases: join: %w", err)
		}
		if err == nil && sameFile(f, path) {
			return &leases{dir: dir, n: n, id: id, member: f, held: map[int32]*os.File{}}, nil
		}
		f.Close() // taken for a dead member's: removed, or about to be
	}
	return nil, fmt.Errorf("consumer leases: join: the member file was taken for a dead member's %d times", joinTries)
}

// sameFile reports whether f is the file at path.
func sameFile(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// tryLock opens (creating if asked) and flocks a file without waiting.
// locked is false when another holds it; the file is then closed.
func tryLock(path string, create bool) (f *os.File, locked bool, err error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	f, err = os.OpenFile(path, flag, 0o640)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// share is how many partitions this member should read now.
func (l *leases) share() (int, error) {
	entries, err := os.ReadDir(filepath.Join(l.dir, "members"))
	if err != nil {
		return 0, fmt.Errorf("consumer leases: %w", err)
	}
	var live []string
	for _, e := range entries {
		name := e.Name()
		if name == l.id {
			live = append(live, name)
			continue
		}
		if !strings.HasSuffix(name, ".lock") {
			continue
		}
		path := filepath.Join(l.dir, "members", name)
		f, locked, err := tryLock(path, false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, fmt.Errorf("consumer leases: %w", err)
		case locked:
			// Its process is gone.
			os.Remove(path)
			f.Close()
		default:
			live = append(live, name)
		}
	}
	slices.Sort(live)
	i, m := slices.Index(live, l.id), len(live)
	s := l.n / m
	if i < l.n%m {
		s++
	}
	return s, nil
}

// rebalance releases partitions over this member's share (release is
// called for each first, to commit) and takes free ones up to it; it
// returns the partitions taken.
func (l *leases) rebalance(release func(p int32) error) (taken []int32, err error) {
	want, err := l.share()
	if err != nil {
		return nil, err
	}
	for len(l.held) > want {
		p := slices.Max(slices.Collect(maps.Keys(l.held)))
		if err := release(p); err != nil {
			return nil, err
		}
		l.drop(p)
	}
	for p := int32(0); int(p) < l.n && len(l.held) < want; p++ {
		if l.held[p] != nil {
			continue
		}
		f, locked, err := tryLock(filepath.Join(l.dir, strconv.Itoa(int(p))+".lock"), true)
		if err != nil {
			return taken, fmt.Errorf("consumer leases: %w", err)
		}
		if locked {
			l.held[p] = f
			taken = append(taken, p)
		}
	}
	return taken, nil
}

func (l *leases) drop(p int32) {
	if f := l.held[p]; f != nil {
		f.Close()
		delete(l.held, p)
	}
}

// close releases every lease and leaves the group.
func (l *leases) close() {
	for p := range l.held {
		l.drop(p)
	}
	os.Remove(filepath.Join(l.dir, "members", l.id))
	l.member.Close()
}
