package raftstore_test

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/raftstore"
)

// counter is the smallest raft.FSM: it counts the commands applied.
type counter struct{ n int }

func (c *counter) Apply(*raft.Log) interface{}         { c.n++; return c.n }
func (c *counter) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not in this example") }
func (c *counter) Restore(io.ReadCloser) error         { return nil }

// A single raft node on a Store: the log and the stable store in one
// directory, snapshots beside it.
func Example() {
	dir, _ := os.MkdirTemp("", "raftstore-example")
	defer os.RemoveAll(dir)

	store, err := raftstore.Open(filepath.Join(dir, "raft"), raftstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(dir, "snapshots"), 2, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	addr, trans := raft.NewInmemTransport("")
	conf := raft.DefaultConfig()
	conf.LocalID = "node1"
	conf.LogOutput = io.Discard

	r, err := raft.NewRaft(conf, &counter{}, store, store, snaps, trans)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Shutdown()
	err = r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: conf.LocalID, Address: addr}}}).Error()
	if err != nil {
		log.Fatal(err)
	}
	for !<-r.LeaderCh() { // true once this node has elected itself
	}
	f := r.Apply([]byte("hello"), time.Second)
	if err := f.Error(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("applied", f.Response(), "command at index", f.Index())
	// Output: applied 1 command at index 3
}
