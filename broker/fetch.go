package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/storage"
)

// Fetch: for each partition, the whole batches from the one holding the
// fetch offset, up to the partition's max bytes and what is left of the
// request's MaxBytes (the first batch of the response always, as Kafka
// does, so that a batch bigger than the limits, or limits of 0, still
// get it through), as a file region of the segment (Log.ReadRegion) that
// the connection sends with sendfile (splice.go). Each partition answers
// its high watermark (the log end: one broker is every replica), last
// stable offset (the same: no transactions) and log start offset. A
// fetch offset below the start or beyond the end is OFFSET_OUT_OF_RANGE.
//
// Long poll: a response with a partition's error is answered at once (as
// Kafka does: the client has something to act on). Otherwise, while the
// response holds fewer than MinBytes, the handler waits (Log.Wait on
// every partition it answers, no polling) until one of them has records
// past what the response holds of it (past its fetch offset when it
// holds none) or is closed, MaxWaitMillis passed, or the server shuts
// down, and looks again.
//
// Fetch sessions (incremental fetches) are not kept: every response has
// session id 0, which tells the client to send full requests; a request
// naming a session is answered FETCH_SESSION_ID_NOT_FOUND.

func handleFetch(ctx context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.FetchRequest)
	s := c.s
	if r.SessionID != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return reply{msg: resp}, nil
	}
	deadline := req.at.Add(time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond)
	for {
		resp, regions, bytes, waits, failed := s.fetchOnce(r)
		if bytes >= int64(max(r.MinBytes, 1)) || failed || len(waits) == 0 || !s.opts.Now().Before(deadline) || ctx.Err() != nil {
			return reply{msg: resp, regions: regions}, nil
		}
		s.longPolls.Add(1)
		waitAny(ctx, deadline, waits)
		s.longPolls.Add(-1)
	}
}

// waiter is a partition the fetch found nothing new in.
type waiter struct {
	log    *storage.Log
	offset int64
}

// waitAny returns when one of the logs has a record at its offset or
// was closed (its topic deleted: the fetch answers for it at once), at
// the deadline, or when ctx ends.
func waitAny(ctx context.Context, deadline time.Time, waits []waiter) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range waits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.log.Wait(wctx, w.offset)
			cancel() // whatever ended this wait, the fetch looks again
		}()
	}
	wg.Wait()
}

// fetchOnce builds a response from what the logs hold now: the regions
// to splice in, their bytes, the partitions to wait on, and whether a
// partition is answered with an error.
func (s *Server) fetchOnce(r *kmsg.FetchRequest) (resp *kmsg.FetchResponse, regions []spliced, total int64, waits []waiter, failed bool) {
	resp = r.ResponseKind().(*kmsg.FetchResponse)
	left := max(int64(r.MaxBytes), 0)
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(r.Topics))
	for _, rt := range r.Topics {
		out := kmsg.NewFetchResponseTopic()
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		name, known := rt.Topic, true
		if r.Version >= 13 {
			name, known = s.meta.topicByID(rt.TopicID)
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rp.Partition
			p.RecordBatches = []byte{}
			if !known {
				p.ErrorCode, failed = kerr.UnknownTopicID.Code, true
				out.Partitions = append(out.Partitions, p)
				continue
			}
			l, err := s.store.Log(name, rp.Partition)
			if err != nil {
				p.ErrorCode, failed = s.codeFor("fetch", err), true
				out.Partitions = append(out.Partitions, p)
				continue
			}
			budget := min(int64(rp.PartitionMaxBytes), left, storage.MaxReadBytes)
			if total == 0 {
				// The first batch of the response goes whatever the
				// limits, a limit of 0 too (Kafka's minOneMessage).
				budget = max(budget, 1)
			}
			var reg *storage.Region
			if budget > 0 {
				reg, err = l.ReadRegion(rp.FetchOffset, int(budget))
			} else {
				// Nothing left for it: only the range check.
				if rp.FetchOffset < l.StartOffset() || rp.FetchOffset > l.EndOffset() {
					err = storage.ErrOffsetOutOfRange
				}
			}
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = l.EndOffset(), l.EndOffset(), l.StartOffset()
			switch {
			case errors.Is(err, storage.ErrOffsetOutOfRange):
				p.ErrorCode = kerr.OffsetOutOfRange.Code
			case err != nil:
				p.ErrorCode = s.codeFor("fetch", err)
			case reg == nil || reg.Length == 0:
				waits = append(waits, waiter{l, rp.FetchOffset})
			case total > 0 && reg.Length > left:
				// Over the request's limit: only the first batch of a
				// response may be.
			default:
				p.RecordBatches = marker(len(regions))
				regions = append(regions, spliced{reg})
				total += reg.Length
				left -= reg.Length
				if reg.NextOffset >= l.EndOffset() {
					// Short of MinBytes, records appended here would
					// count too. (Not when the partition's limits cut
					// what it had: waiting adds nothing to it.)
					waits = append(waits, waiter{l, reg.NextOffset})
				}
			}
			failed = failed || p.ErrorCode != 0
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, regions, total, waits, failed
}
