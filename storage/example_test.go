package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/seglog/seglog/storage"
)

func Example() {
	dir, _ := os.MkdirTemp("", "seglog-example")
	defer os.RemoveAll(dir)

	// One partition log: fsync on every append, concurrent appenders
	// share fsyncs (group commit).
	l, err := storage.Open(dir, storage.Options{Sync: storage.SyncAlways})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	res, err := l.Append(
		storage.Record{Key: []byte("user-1"), Value: []byte("signed up")},
		storage.Record{Key: []byte("user-2"), Value: []byte("paid")},
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("appended offsets", res.FirstOffset, "to", res.LastOffset)

	// Read records from an offset; at the end, wait for more.
	r := l.NewReader(0)
	for r.Next() {
		rec := r.Record()
		fmt.Printf("%d %s=%s\n", rec.Offset, rec.Key, rec.Value)
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println("wait at the end:", l.Wait(ctx, l.EndOffset()))
	// Output:
	// appended offsets 0 to 1
	// 0 user-1=signed up
	// 1 user-2=paid
	// wait at the end: context deadline exceeded
}

func ExampleStore() {
	root, _ := os.MkdirTemp("", "seglog-store")
	defer os.RemoveAll(root)

	s, err := storage.OpenStore(root, storage.StoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateTopic("orders", 4, storage.TopicConfig{}); err != nil {
		log.Fatal(err)
	}
	// Records with the same key go to the same partition.
	out, err := s.Produce("orders",
		storage.Record{Key: []byte("customer-7"), Value: []byte("order 1")},
		storage.Record{Key: []byte("customer-7"), Value: []byte("order 2")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0].Partition == out[1].Partition, out[1].Offset-out[0].Offset)
	// Output: true 1
}
