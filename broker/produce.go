package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Produce: each partition's records (one record batch, as Kafka requires
// from v3), checked whole first (checkBatch: every record decoded, as
// Kafka's log validates them), go to Log.AppendBatch as the client
// encoded them; the log patches the base offset in place and stores the
// bytes unchanged. The
// partitions of one request are appended concurrently. The answer comes
// once AppendBatch returned, that is once the records are as durable as
// the topic's sync policy makes them (with SyncAlways, fsynced): acks=1
// and acks=-1 wait alike, a single broker being every replica. acks=0
// gets no answer; a failure then closes the connection, as Kafka does,
// so that the client notices.
//
// Idempotent producers: the log checks the producer id, epoch and
// sequence of each batch against its producer state (errors.go maps
// duplicates to success with the original offsets, out-of-order
// sequences to OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch to
// INVALID_PRODUCER_EPOCH). Transactions are not served: a transactional
// produce is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED.

// Kafka's v2 batch header: the magic byte and the attributes' place.
const (
	magicOffset      = 16
	attributesOffset = 21
	attrTransaction  = 0x10
	attrControl      = 0x20
)

func handleProduce(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	s := c.s
	var fixed int16 // an answer for every partition
	switch {
	case r.TransactionID != nil:
		fixed = kerr.TransactionalIDAuthorizationFailed.Code
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		fixed = kerr.InvalidRequiredAcks.Code
	}
	type job struct {
		topic string
		rp    *kmsg.ProduceRequestTopicPartition
		out   *kmsg.ProduceResponseTopicPartition
	}
	var jobs []job
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(r.Topics))
	for i := range r.Topics {
		rt := &r.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewProduceResponseTopic()
		out.Topic = rt.Topic
		out.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			out.Partitions[j] = kmsg.NewProduceResponseTopicPartition()
			out.Partitions[j].Partition = rt.Partitions[j].Partition
			out.Partitions[j].ErrorCode = fixed
			if fixed == 0 {
				jobs = append(jobs, job{rt.Topic, &rt.Partitions[j], &out.Partitions[j]})
			}
		}
	}
	run := func(j job) {
		res, logStart, err := s.appendBatch(j.topic, j.rp.Partition, j.rp.Records, req.version)
		j.out.LogStartOffset = logStart
		if err != nil {
			j.out.ErrorCode = s.codeFor("produce", err)
			msg := err.Error()
			j.out.ErrorMessage = &msg
			j.out.BaseOffset = -1
			return
		}
		j.out.BaseOffset = res.FirstOffset
		// A LogAppendTime topic stamped the batch (in place) with the
		// time it was appended: the client learns it from the answer.
		if h, err := segment.ParseHeader(j.rp.Records, segment.Limits{}); err == nil && h.TimestampType() == segment.LogAppendTime {
			j.out.LogAppendTime = h.MaxTimestamp
		}
	}
	if len(jobs) == 1 {
		run(jobs[0])
	} else {
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(j)
			}()
		}
		wg.Wait()
	}
	if r.Acks == 0 {
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return reply{}, fmt.Errorf("acks=0 produce to %s/%d failed: %s", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		}
		return reply{}, nil
	}
	return reply{msg: resp}, nil
}

// errTransactional refuses a transactional or control batch.
var errTransactional = fmt.Errorf("transactions are not supported: %w", kerr.TransactionalIDAuthorizationFailed)

// appendBatch appends one partition's batch of a produce request of the
// given version; logStart is the log's start offset after it (-1 when
// there is no log).
func (s *Server) appendBatch(topic string, partition int32, batch []byte, version int16) (storage.AppendResult, int64, error) {
	l, err := s.store.Log(topic, partition)
	if err != nil {
		return storage.AppendResult{}, -1, err
	}
	if len(batch) == 0 {
		return storage.AppendResult{}, l.StartOffset(), fmt.Errorf("%w: no records", storage.ErrInvalidBatch)
	}
	if len(batch) > attributesOffset+1 && batch[magicOffset] == 2 && batch[attributesOffset+1]&(attrTransaction|attrControl) != 0 {
		return storage.AppendResult{}, l.StartOffset(), errTransactional
	}
	if err := s.checkBatch(batch, version); err != nil {
		return storage.AppendResult{}, l.StartOffset(), err
	}
	res, err := l.AppendBatch(batch)
	if errors.Is(err, storage.ErrClosed) && s.ctx.Err() == nil {
		// Closed by a topic deletion meanwhile.
		err = fmt.Errorf("%w: %w", storage.ErrUnknownTopic, err)
	}
	return res, l.StartOffset(), err
}

// checkBatch checks a client's batch whole, every record decoded, before
// the log appends it. The log checks the header, its limits and the CRC,
// and decodes the records only when its store was opened with
// ValidateRecords: a batch whose records lie about their count or
// lengths under a CRC computed over the lie would otherwise be stored and
// acknowledged, and then drop records at, or fail, every consumer, where
// Kafka refuses it. The answers are Kafka's: a CRC that does not match
// the bytes is CORRUPT_MESSAGE (damaged on the way: clients retry it);
// anything else that is not one well-formed RecordBatch v2 (another
// magic, two batches, records that do not add up) is INVALID_RECORD
// (clients give up, as a retry sends the same bytes). A zstd batch in a
// request below version 7, which predates zstd, is
// UNSUPPORTED_COMPRESSION_TYPE, as Kafka answers it. The limits are the
// request's size and the default bound on decompressed records; the
// log's own, which may be tighter, come after (MESSAGE_TOO_LARGE).
func (s *Server) checkBatch(batch []byte, version int16) error {
	if len(batch) > magicOffset && batch[magicOffset] != 2 {
		return fmt.Errorf("%w: magic %d: produce requests from version 3 carry only record batches v2", kerr.InvalidRecord, batch[magicOffset])
	}
	lim := segment.Limits{MaxBatchBytes: s.opts.MaxRequestBytes}
	h, err := segment.CheckBatch(batch, lim, true)
	switch {
	case err == nil && version < 7 && h.Codec() == segment.CodecZstd:
		return fmt.Errorf("%w: zstd batches need produce version 7 or later (this request is version %d)", kerr.UnsupportedCompressionType, version)
	case err == nil, errors.Is(err, segment.ErrTooLarge):
		return err
	}
	if _, verr := segment.Verify(batch, lim); errors.Is(verr, segment.ErrChecksum) {
		return fmt.Errorf("%w: %w", kerr.CorruptMessage, err)
	}
	return fmt.Errorf("%w: %w", kerr.InvalidRecord, err)
}
