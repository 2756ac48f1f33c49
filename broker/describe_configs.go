package broker

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/storage"
)

// DescribeConfigs: a topic's configs in Kafka's names (storage.TopicSettings),
// its own values marked DYNAMIC_TOPIC_CONFIG and the rest
// DEFAULT_CONFIG; the broker's few settings that clients ask about. Other
// resource types are INVALID_REQUEST.

const (
	resourceTopic  = 2
	resourceBroker = 4
)

func handleDescribeConfigs(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	s := c.s
	for _, rr := range r.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		wanted := func(name string) bool { return rr.ConfigNames == nil || slices.Contains(rr.ConfigNames, name) }
		add := func(name, value string, own, readOnly bool) {
			if !wanted(name) {
				return
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.ReadOnly = name, &value, readOnly
			rc.IsDefault = !own
			rc.Source = kmsg.ConfigSource(configSource(own))
			if readOnly {
				rc.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
			out.Configs = append(out.Configs, rc)
		}
		switch rr.ResourceType {
		case resourceTopic:
			cfg, err := s.store.TopicConfig(rr.ResourceName)
			if err != nil {
				out.ErrorCode = s.codeFor("describe configs", err)
				break
			}
			for _, ts := range storage.TopicSettings() {
				v, own := cfg.GetKafka(ts.KafkaName)
				add(ts.KafkaName, v, own, false)
			}
		case resourceBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(s.meta.nodeID)) {
				out.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			add("auto.create.topics.enable", strconv.FormatBool(!s.opts.NoAutoCreateTopics), false, true)
			add("broker.id", strconv.Itoa(int(s.meta.nodeID)), false, true)
			add("node.id", strconv.Itoa(int(s.meta.nodeID)), false, true)
			add("num.partitions", strconv.Itoa(s.opts.DefaultPartitions), false, true)
			add("socket.request.max.bytes", strconv.Itoa(s.opts.MaxRequestBytes), false, true)
			add("connections.max.idle.ms", strconv.FormatInt(s.opts.IdleTimeout.Milliseconds(), 10), false, true)
			add("group.min.session.timeout.ms", strconv.FormatInt(s.opts.MinSessionTimeout.Milliseconds(), 10), false, true)
			add("group.max.session.timeout.ms", strconv.FormatInt(s.opts.MaxSessionTimeout.Milliseconds(), 10), false, true)
		default:
			out.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, out)
	}
	return reply{msg: resp}, nil
}
