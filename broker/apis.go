package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The APIs served and their version ranges (the package doc says why
// these). Each handler lives in a file of its own.

// handler answers one request. An error closes the connection (a
// request that cannot be answered); errors a client should see are error
// codes in the reply.
type handler func(ctx context.Context, c *conn, req *request) (reply, error)

type api struct {
	min, max int16
	handle   handler
}

const apiVersionsKey = 18

var apis map[int16]api

func init() {
	apis = map[int16]api{
		0:  {3, 11, handleProduce},
		1:  {4, 16, handleFetch},
		2:  {1, 6, handleListOffsets},
		3:  {0, 12, handleMetadata},
		8:  {0, 8, handleOffsetCommit},
		9:  {0, 8, handleOffsetFetch},
		10: {0, 4, handleFindCoordinator},
		11: {0, 9, handleJoinGroup},
		12: {0, 4, handleHeartbeat},
		13: {0, 5, handleLeaveGroup},
		14: {0, 5, handleSyncGroup},
		15: {0, 5, handleDescribeGroups},
		16: {0, 4, handleListGroups},
		18: {0, 3, handleApiVersions},
		19: {0, 7, handleCreateTopics},
		20: {0, 6, handleDeleteTopics},
		22: {0, 4, handleInitProducerID},
		32: {0, 4, handleDescribeConfigs},
	}
}

// apiKeys is the ApiVersions answer: every API served, by key.
func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for k, a := range apis {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.min, MaxVersion: a.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}

// handleApiVersions answers with the ranges served. A version outside
// ours gets a v0 answer with UNSUPPORTED_VERSION and the ranges, so that
// the client retries with one we serve (as Kafka does).
func handleApiVersions(_ context.Context, _ *conn, req *request) (reply, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	if a := apis[apiVersionsKey]; req.version < a.min || req.version > a.max {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = apiKeys()
		return reply{msg: resp}, nil
	}
	resp.SetVersion(req.version)
	resp.ApiKeys = apiKeys()
	return reply{msg: resp}, nil
}
