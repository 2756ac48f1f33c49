package consumer_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seglog/seglog/consumer"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// newTopic creates a data directory with topic t of n partitions, each
// holding the values given for it, and returns the writer's store.
func newTopic(t *testing.T, n int, values map[int32][]string) (string, *storage.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	store, err := storage.OpenStore(dir, storage.StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, store.CreateTopic("t", n, storage.TopicConfig{}))
	for p, vs := range values {
		for _, v := range vs {
			appendValue(t, store, p, v)
		}
	}
	return dir, store
}

func appendValue(t *testing.T, store *storage.Store, p int32, v string) {
	t.Helper()
	l, err := store.Log("t", p)
	require.NoError(t, err)
	_, err = l.Append(storage.Record{Value: []byte(v)})
	require.NoError(t, err)
	require.NoError(t, l.Sync())
}

// readOnly opens dir's store read-only, as a consumer process does.
func readOnly(t *testing.T, dir string) *storage.Store {
	t.Helper()
	s, err := storage.OpenStore(dir, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// drain polls c to io.EOF, committing each poll, and returns "p:value"
// of every record.
func drain(t *testing.T, c *consumer.Consumer) []string {
	t.Helper()
	var got []string
	for {
		recs, err := c.Poll(context.Background(), 2)
		if err == io.EOF {
			return got
		}
		require.NoError(t, err)
		for _, r := range recs {
			got = append(got, fmt.Sprintf("%d:%s", r.Partition, r.Value))
		}
		require.NoError(t, c.Commit(recs))
	}
}

func TestConsumerReadsPartitionsInOrderToTheEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, _ := newTopic(t, 3, map[int32][]string{0: {"a", "b", "c"}, 2: {"x"}})
	c, err := consumer.Open(readOnly(t, dir), "t", consumer.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"0:a", "0:b", "0:c", "2:x"}, drain(t, c))
	require.NoError(t, c.Close())
}

func TestConsumerStartsWhereToldOrWhereTheGroupCommitted(t *testing.T) {
	dir, _ := newTopic(t, 1, map[int32][]string{0: {"a", "b", "c", "d"}})
	for _, tc := range []struct {
		name string
		from consumer.Position
		want []string
	}{
		{"earliest", consumer.Earliest(), []string{"0:a", "0:b", "0:c", "0:d"}},
		{"latest", consumer.Latest(), nil},
		{"an offset", consumer.AtOffset(2), []string{"0:c", "0:d"}},
		{"the last records", consumer.LastRecords(1), []string{"0:d"}},
		{"more last records than the log holds", consumer.LastRecords(10), []string{"0:a", "0:b", "0:c", "0:d"}},
		{"a time before every record", consumer.AtTime(0), []string{"0:a", "0:b", "0:c", "0:d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := consumer.Open(readOnly(t, dir), "t", consumer.Options{From: tc.from, Partitions: []int32{0}})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, tc.want, drain(t, c))
		})
	}

	t.Run("a group resumes after its commit", func(t *testing.T) {
		store := readOnly(t, dir)
		c, err := consumer.Open(store, "t", consumer.Options{Group: "g", From: consumer.AtOffset(1)})
		require.NoError(t, err)
		recs, err := c.Poll(context.Background(), 2)
		require.NoError(t, err)
		require.NoError(t, c.Commit(recs))
		require.NoError(t, c.Close())

		c, err = consumer.Open(store, "t", consumer.Options{Group: "g", From: consumer.Earliest()})
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, []string{"0:d"}, drain(t, c), "from the commit after b, c; From does not apply")
	})

	t.Run("an offset outside the log is moved into it, and said so", func(t *testing.T) {
		var notes []string
		c, err := consumer.Open(readOnly(t, dir), "t", consumer.Options{From: consumer.AtOffset(99), Notify: func(m string) { notes = append(notes, m) }})
		require.NoError(t, err)
		defer c.Close()
		assert.Empty(t, drain(t, c))
		require.Len(t, notes, 1)
		assert.Contains(t, notes[0], "offset 99 on t-0 is past the log end 4")
	})
}

func TestConsumerFollowWaitsForRecordsUntilCancelled(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, writer := newTopic(t, 2, nil)
	c, err := consumer.Open(readOnly(t, dir), "t", consumer.Options{Follow: true})
	require.NoError(t, err)
	defer c.Close()

	got := make(chan []consumer.Record, 1)
	go func() {
		recs, _ := c.Poll(context.Background(), 10)
		got <- recs
	}()
	appendValue(t, writer, 1, "late")
	select {
	case recs := <-got:
		require.Len(t, recs, 1)
		assert.Equal(t, int32(1), recs[0].Partition)
		assert.Equal(t, "late", string(recs[0].Value))
	case <-time.After(30 * time.Second):
		t.Fatal("Poll did not return the record appended while it waited")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Poll(ctx, 10)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(30 * time.Second):
		t.Fatal("Poll did not return when its context was cancelled")
	}
}

// follow polls c until ctx ends, sending "p:value" of every record.
func follow(ctx context.Context, c *consumer.Consumer, out chan<- string) error {
	for {
		recs, err := c.Poll(ctx, 100)
		if err != nil {
			return err
		}
		for _, r := range recs {
			out <- fmt.Sprintf("%d:%s", r.Partition, r.Value)
		}
		if err := c.Commit(recs); err != nil {
			return err
		}
	}
}

// next returns the next n values sent on ch.
func next(t *testing.T, ch <-chan string, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case s := <-ch:
			got = append(got, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("got %v, want %d records", got, n)
		}
	}
	return got
}

func TestGroupProcessesSplitPartitionsAndTakeOverOnClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir, writer := newTopic(t, 4, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *consumer.Consumer {
		c, err := consumer.Open(readOnly(t, dir), "t", consumer.Options{Group: "g", Follow: true})
		require.NoError(t, err)
		return c
	}
	a, b := open(), open()
	outA, outB := make(chan string, 100), make(chan string, 100)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	bctx, stopB := context.WithCancel(ctx)
	go func() { doneA <- follow(ctx, a, outA) }()
	go func() { doneB <- follow(bctx, b, outB) }()

	// Rounds of one record per partition until the two split them 2 and 2.
	split := false
	for round := 0; round < 200 && !split; round++ {
		for p := range int32(4) {
			appendValue(t, writer, p, fmt.Sprintf("r%d", round))
		}
		var fromA, fromB int
		for range 4 {
			select {
			case <-outA:
				fromA++
			case <-outB:
				fromB++
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: a record was not read", round)
			}
		}
		split = fromA == 2 && fromB == 2
	}
	require.True(t, split, "the two processes of the group did not split the partitions")

	// b leaves: a takes its partitions over, from b's commits.
	stopB()
	require.ErrorIs(t, <-doneB, context.Canceled)
	require.NoError(t, b.Close())
	for p := range int32(4) {
		appendValue(t, writer, p, "after")
	}
	assert.ElementsMatch(t, []string{"0:after", "1:after", "2:after", "3:after"}, next(t, outA, 4))
	cancel()
	require.ErrorIs(t, <-doneA, context.Canceled)
	require.NoError(t, a.Close())
}

func TestLagsAndResets(t *testing.T) {
	dir, _ := newTopic(t, 2, map[int32][]string{0: {"a", "b", "c"}, 1: {"x"}})
	ost, err := offsets.Open(offsets.Dir(dir), offsets.Options{})
	require.NoError(t, err)
	defer ost.Close()
	require.NoError(t, ost.Commit("g", "t", 0, 1, ""))
	require.NoError(t, ost.Commit("g", "gone", 3, 7, ""))
	store := readOnly(t, dir)

	lags, err := consumer.Lags(store, ost, []string{"g"})
	require.NoError(t, err)
	ptr := func(v int64) *int64 { return &v }
	assert.Equal(t, []consumer.Lag{
		{Group: "g", Topic: "gone", Partition: 3, Committed: ptr(7)},
		{Group: "g", Topic: "t", Partition: 0, Committed: ptr(1), LogStart: ptr(0), LogEnd: ptr(3), Lag: ptr(2)},
		{Group: "g", Topic: "t", Partition: 1, LogStart: ptr(0), LogEnd: ptr(1), Lag: ptr(1)},
	}, lags)
	assert.Equal(t, []consumer.GroupLag{{Group: "g", Committed: ptr(1), Lag: 2}}, consumer.GroupLags(ost, "t", 0, 0, 3))
	assert.Equal(t, []string{"t"}, consumer.GroupTopics(store, ost, "g"), "a topic the store does not have is not one of the group's topics")
	assert.Empty(t, consumer.GroupTopics(store, ost, "other"))

	for _, tc := range []struct {
		name string
		to   consumer.Position
		want []consumer.Reset
	}{
		{"to the end", consumer.Latest(), []consumer.Reset{
			{Group: "g", Topic: "t", Partition: 0, Current: ptr(1), New: 3},
			{Group: "g", Topic: "t", Partition: 1, New: 1},
		}},
		{"shifted from the commit, or from the start without one", consumer.ShiftBy(1), []consumer.Reset{
			{Group: "g", Topic: "t", Partition: 0, Current: ptr(1), New: 2},
			{Group: "g", Topic: "t", Partition: 1, New: 1},
		}},
		{"outside the log", consumer.AtOffset(5), []consumer.Reset{
			{Group: "g", Topic: "t", Partition: 0, Current: ptr(1), New: 3, Note: "(5 is past the log end)"},
			{Group: "g", Topic: "t", Partition: 1, New: 1, Note: "(5 is past the log end)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := consumer.PlanReset(store, ost, "g", "t", []int32{0, 1}, tc.to)
			require.NoError(t, err)
			assert.Equal(t, tc.want, rs)
		})
	}
	rs, err := consumer.PlanReset(store, ost, "g", "t", []int32{0, 1}, consumer.Earliest())
	require.NoError(t, err)
	require.NoError(t, consumer.ApplyReset(ost, "g", rs))
	pos, err := ost.Fetch("g", "t", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(0), pos.Offset)
}

func TestBrokerAddrNamesOnlyABrokerThatAnswers(t *testing.T) {
	dir := t.TempDir()
	assert.Empty(t, consumer.BrokerAddr(dir), "nothing announced")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, consumer.AnnounceBroker(dir, ln.Addr().String()))
	assert.Equal(t, ln.Addr().String(), consumer.BrokerAddr(dir))
	ln.Close()
	assert.Empty(t, consumer.BrokerAddr(dir), "a broker that was killed does not answer")
	consumer.WithdrawBroker(dir)
	assert.Empty(t, consumer.BrokerAddr(dir))
}
