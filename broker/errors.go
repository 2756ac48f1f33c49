package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// The one table from the engine's errors to Kafka's error codes. Every
// handler answers an engine error with errorCode(err); what is not in the
// table is UNKNOWN_SERVER_ERROR, and logged.

var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	// Checked first: a caller's too-large batch wraps ErrInvalidBatch too.
	{segment.ErrTooLarge, kerr.MessageTooLarge},
	// Not one well-formed v2 batch (produce.go answers a wrong CRC
	// CORRUPT_MESSAGE before the log sees it).
	{storage.ErrInvalidBatch, kerr.InvalidRecord},
	{storage.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{storage.ErrUnknownTopic, kerr.UnknownTopicOrPartition},
	{storage.ErrInvalidPartition, kerr.UnknownTopicOrPartition},
	{storage.ErrInvalidTopic, kerr.InvalidTopicException},
	{storage.ErrTopicExists, kerr.TopicAlreadyExists},
	{storage.ErrInvalidOptions, kerr.InvalidConfig},
	{storage.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{storage.ErrProducerFenced, kerr.InvalidProducerEpoch},
	// The disk failed the partition: the client may retry later.
	{storage.ErrDiskFull, kerr.KafkaStorageError},
	{storage.ErrFailed, kerr.KafkaStorageError},
	{storage.ErrCorrupt, kerr.KafkaStorageError},
	{storage.ErrOffsetOverflow, kerr.KafkaStorageError},
	{storage.ErrReadOnly, kerr.KafkaStorageError},
	// Not acknowledged: retriable, as after a leader change.
	{storage.ErrTruncated, kerr.NotLeaderForPartition},
	// The server is stopping: retriable against it once it is back.
	{storage.ErrClosed, kerr.NotLeaderForPartition},
	{offsets.ErrClosed, kerr.CoordinatorNotAvailable},
	{offsets.ErrInvalid, kerr.InvalidRequest},
	{offsets.ErrCorrupt, kerr.KafkaStorageError},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
	{context.Canceled, kerr.RequestTimedOut},
}

// errorCode is the Kafka error code for an engine error (0 for nil).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// codeFor is errorCode, logging what the table does not know.
func (s *Server) codeFor(what string, err error) int16 {
	code := errorCode(err)
	if code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
		s.log.Error(what, "err", err)
	}
	return code
}
