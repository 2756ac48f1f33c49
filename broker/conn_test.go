package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openConns is how many connections the server still holds.
func (s *Server) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func TestClientGoneWhileARequestWaitsFreesTheConnectionAtOnce(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "gone", 1, nil).TopicID
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(3)
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "gone", "consumer", 600_000, 3_600_000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	tests := []struct {
		name  string
		setup func()
		send  func(c *rawConn)
	}{
		{"a long-poll fetch", func() {}, func(c *rawConn) {
			req := fetchReq(id, "gone", 0, 0, time.Hour, 1<<20)
			req.SetVersion(12)
			c.send(1, 12, 1, true, req.AppendTo(nil))
			require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
		}},
		{"a JoinGroup waiting for the rebalance", func() {
			// The first member is answered; the second one's join waits
			// for the first to rejoin, up to the rebalance timeout.
			first := b.raw()
			first.send(11, 3, 1, false, jg.AppendTo(nil))
			_, _, err := first.recv()
			require.NoError(t, err)
		}, func(c *rawConn) {
			c.send(11, 3, 1, false, jg.AppendTo(nil))
			require.Eventually(t, func() bool {
				b.srv.groups.mu.Lock()
				defer b.srv.groups.mu.Unlock()
				return b.srv.groups.groups["gone"].state == groupPreparingRebalance
			}, 10*time.Second, time.Millisecond)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			before := b.srv.openConns()
			c := b.raw()
			require.Eventually(t, func() bool { return b.srv.openConns() == before+1 }, 10*time.Second, time.Millisecond)
			tt.send(c)
			require.NoError(t, c.nc.Close())
			require.Eventually(t, func() bool { return b.srv.openConns() == before }, 10*time.Second, time.Millisecond,
				"the connection of a client gone is held until its request's wait ends")
			require.Zero(t, b.srv.longPolls.Load())
		})
	}
}

func TestARequestSizeAloneDoesNotMakeTheServerAllocateIt(t *testing.T) {
	const size = 64 << 20
	b := startBroker(t, t.TempDir(), Options{MaxRequestBytes: size})
	before := b.srv.openConns()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	allocated := m.TotalAlloc
	// Clients that announce the largest request allowed, send a few bytes
	// of it and go: the server read each size, and each ends at EOF.
	for range 4 {
		c := b.raw()
		require.Eventually(t, func() bool { return b.srv.openConns() == before+1 }, 10*time.Second, time.Millisecond)
		frame := binary.BigEndian.AppendUint32(nil, size)
		_, err := c.nc.Write(append(frame, 0, 0, 0, 3, 0, 0, 0, 1))
		require.NoError(t, err)
		require.NoError(t, c.nc.Close())
		require.Eventually(t, func() bool { return b.srv.openConns() == before }, 10*time.Second, time.Millisecond)
	}
	runtime.ReadMemStats(&m)
	assert.Less(t, m.TotalAlloc-allocated, uint64(size), "the server allocated what the clients announced, not what they sent")
}

func TestARequestArrivingSlowerThanTheIdleTimeoutIsNotCutAsIdle(t *testing.T) {
	const idle = time.Second
	b := startBroker(t, t.TempDir(), Options{IdleTimeout: idle})
	c := b.raw()
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	body := meta.AppendTo(nil)
	frame := binary.BigEndian.AppendUint32(nil, uint32(10+len("test")+len(body)))
	frame = binary.BigEndian.AppendUint16(frame, 3)
	frame = binary.BigEndian.AppendUint16(frame, 1)
	frame = binary.BigEndian.AppendUint32(frame, 9)
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(append(frame, "test"...), body...)
	// The request comes in three parts, each within the idle timeout of
	// the one before, all of it over more than the idle timeout.
	for i, part := range [][]byte{frame[:6], frame[6:10], frame[10:]} {
		if i > 0 {
			<-time.After(idle * 6 / 10)
		}
		_, err := c.nc.Write(part)
		require.NoError(t, err)
	}
	corr, _, err := c.recv()
	require.NoError(t, err, "a connection that kept sending was closed as idle")
	assert.Equal(t, int32(9), corr)
}

func TestARequestThatBreaksTheConnectionBehindAWaitingOneClosesItAtOnce(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{MaxRequestBytes: 1 << 10})
	id := createTopic(t, b, "behind", 1, nil).TopicID
	tests := []struct {
		name string
		send func(c *rawConn)
	}{
		{"a size over the limit", func(c *rawConn) {
			_, err := c.nc.Write(binary.BigEndian.AppendUint32(nil, 1<<20))
			require.NoError(t, err)
		}},
		{"an unknown api key", func(c *rawConn) { c.send(999, 0, 2, false, nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := b.raw()
			req := fetchReq(id, "behind", 0, 0, time.Hour, 1<<20)
			req.SetVersion(12)
			c.send(1, 12, 1, true, req.AppendTo(nil))
			require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
			tt.send(c)
			// The fetch may be answered; then the connection ends, long
			// before the fetch's MaxWait.
			_, _, err := c.recv()
			if err == nil {
				_, _, err = c.recv()
			}
			require.Error(t, err)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open behind the waiting fetch")
			require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 0 }, 10*time.Second, time.Millisecond)
		})
	}
}

func TestAResponseReadSlowerThanTheIdleTimeoutIsNotCutAsIdle(t *testing.T) {
	const idle = time.Second
	b := startBroker(t, t.TempDir(), Options{IdleTimeout: idle})
	id := createTopic(t, b, "slow", 1, nil).TopicID
	cl := b.client()
	for range 8 {
		require.Zero(t, produce(t, cl, "slow", 1, map[int32][]byte{0: largeBatch(t, 1<<20)})[0].ErrorCode)
	}
	c := b.raw()
	require.NoError(t, c.nc.(*net.TCPConn).SetReadBuffer(64<<10))
	req := fetchReq(id, "slow", 0, 0, 0, 64<<20)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 64 << 20
	req.SetVersion(12)
	c.send(1, 12, 1, true, req.AppendTo(nil))
	// The client reads the response (16 MiB and more) in parts, each
	// within the idle timeout of the one before, all of it over more than
	// the idle timeout: the server's sends go on as it reads.
	var size [4]byte
	_, err := io.ReadFull(c.nc, size[:])
	require.NoError(t, err)
	left := int(binary.BigEndian.Uint32(size[:]))
	require.Greater(t, left, 16<<20)
	buf := make([]byte, 2<<20)
	for left > 0 {
		<-time.After(idle * 3 / 10)
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.ReadFull(c.nc, buf[:min(left, len(buf))])
		require.NoError(t, err, "the response was cut with %d bytes to go", left)
		left -= n
	}
}
