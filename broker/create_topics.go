package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/storage"
)

// CreateTopics: a topic with its partition count (-1: the default) and
// its configs (storage.TopicConfig.SetKafka) onto Store.CreateTopic, then
// given a topic id. A replication factor other than -1 or 1 is
// INVALID_REPLICATION_FACTOR (one broker), a manual replica assignment
// INVALID_REQUEST, an existing topic TOPIC_ALREADY_EXISTS. ValidateOnly
// checks everything and creates nothing.

func handleCreateTopics(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	s := c.s
	for _, rt := range r.Topics {
		out := kmsg.NewCreateTopicsResponseTopic()
		out.Topic = rt.Topic
		cfg, n, err := s.checkCreate(rt)
		if err == nil && !r.ValidateOnly {
			err = s.createTopic(rt.Topic, n, cfg)
			if err == nil {
				s.log.Info("topic created", "topic", rt.Topic, "partitions", n, "client", req.clientID)
			}
		}
		if err != nil {
			out.ErrorCode = s.codeFor("create topic", err)
			msg := err.Error()
			out.ErrorMessage = &msg
		} else {
			out.NumPartitions, out.ReplicationFactor = int32(n), 1
			if id, err := s.meta.topicID(rt.Topic); err == nil {
				out.TopicID = id
			}
			for _, ts := range storage.TopicSettings() {
				v, own := cfg.GetKafka(ts.KafkaName)
				rc := kmsg.NewCreateTopicsResponseTopicConfig()
				rc.Name, rc.Value = ts.KafkaName, &v
				rc.Source = configSource(own)
				out.Configs = append(out.Configs, rc)
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	return reply{msg: resp}, nil
}

// checkCreate validates one topic of a CreateTopics request.
func (s *Server) checkCreate(rt kmsg.CreateTopicsRequestTopic) (storage.TopicConfig, int, error) {
	var cfg storage.TopicConfig
	if err := storage.ValidateTopic(rt.Topic); err != nil {
		return cfg, 0, err
	}
	if _, err := s.store.Partitions(rt.Topic); err == nil {
		return cfg, 0, fmt.Errorf("topic %s exists: %w", rt.Topic, kerr.TopicAlreadyExists)
	}
	if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
		return cfg, 0, fmt.Errorf("replication factor %d on a single broker: %w", rt.ReplicationFactor, kerr.InvalidReplicationFactor)
	}
	if len(rt.ReplicaAssignment) > 0 {
		return cfg, 0, fmt.Errorf("manual replica assignment: %w", kerr.InvalidRequest)
	}
	n := int(rt.NumPartitions)
	if n == -1 {
		n = s.opts.DefaultPartitions
	}
	if n < 1 || n > 1<<20 {
		return cfg, 0, fmt.Errorf("%d partitions: %w", rt.NumPartitions, kerr.InvalidPartitions)
	}
	for _, kc := range rt.Configs {
		if kc.Value == nil {
			continue
		}
		if err := cfg.SetKafka(kc.Name, *kc.Value); err != nil {
			return cfg, 0, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, 0, err
	}
	return cfg, n, nil
}

// configSource is DescribeConfigs' source of a value: the topic's own, or
// the default.
func configSource(own bool) int8 {
	if own {
		return 1 // DYNAMIC_TOPIC_CONFIG
	}
	return 5 // DEFAULT_CONFIG
}
