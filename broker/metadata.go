package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/storage"
)

// Metadata: the one broker (node id from meta.properties, at the
// advertised address), the cluster id, and the topics asked for (all of
// them when the request says so), each partition led by this broker at
// leader epoch 0 with itself as the only replica. A topic that does not
// exist is created with Options.DefaultPartitions when the request allows
// it (always before v4) and the server does; an invalid name is
// INVALID_TOPIC_EXCEPTION, an unknown one UNKNOWN_TOPIC_OR_PARTITION (or
// UNKNOWN_TOPIC_ID when named by id).

func handleMetadata(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	s := c.s
	host, port := s.advertised(c.nc.LocalAddr())
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = s.meta.nodeID, host, port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ClusterID = &s.meta.clusterID
	resp.ControllerID = s.meta.nodeID

	all := r.Topics == nil || r.Version == 0 && len(r.Topics) == 0
	if all {
		for _, t := range s.store.Topics() {
			resp.Topics = append(resp.Topics, s.topicMetadata(t.Name, uuid{}))
		}
		return reply{msg: resp}, nil
	}
	autoCreate := !s.opts.NoAutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			name, ok := s.meta.topicByID(rt.TopicID)
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID, mt.ErrorCode = rt.TopicID, kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, s.topicMetadata(name, rt.TopicID))
			continue
		}
		name := *rt.Topic
		if autoCreate {
			if _, err := s.store.Partitions(name); err != nil && storage.ValidateTopic(name) == nil {
				if err := s.createTopic(name, s.opts.DefaultPartitions, storage.TopicConfig{}); err != nil {
					s.log.Warn("auto-create topic failed", "topic", name, "err", err)
				} else {
					s.log.Info("topic created on first use", "topic", name, "partitions", s.opts.DefaultPartitions, "client", req.clientID)
				}
			}
		}
		resp.Topics = append(resp.Topics, s.topicMetadata(name, uuid{}))
	}
	return reply{msg: resp}, nil
}

// topicMetadata describes one topic, or says why it cannot.
func (s *Server) topicMetadata(name string, id uuid) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.TopicID = id
	n, err := s.store.Partitions(name)
	if err != nil {
		mt.ErrorCode = errorCode(err)
		return mt
	}
	if mt.TopicID, err = s.meta.topicID(name); err != nil {
		mt.ErrorCode = s.codeFor("topic id", err)
		return mt
	}
	for p := range int32(n) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.Leader = s.meta.nodeID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.meta.nodeID}
		mp.ISR = []int32{s.meta.nodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// createTopic creates a topic in the store and gives it an id.
func (s *Server) createTopic(name string, partitions int, cfg storage.TopicConfig) error {
	if err := s.store.CreateTopic(name, partitions, cfg); err != nil {
		return err
	}
	_, err := s.meta.topicID(name)
	return err
}
