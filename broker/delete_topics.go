package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/offsets"
)

// DeleteTopics: by name, or by topic id from v6. The topic's logs are
// closed and its directories removed (Store.DeleteTopic), every group's
// committed offsets on it dropped (a topic created again under the name
// starts with none), and its id forgotten. Groups' assignments are the
// clients' business: their next metadata refresh drops the topic.

func handleDeleteTopics(_ context.Context, c *conn, req *request) (reply, error) {
	r := req.msg.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	s := c.s
	type named struct {
		name *string
		id   uuid
	}
	var todo []named
	for _, n := range r.TopicNames {
		todo = append(todo, named{name: &n})
	}
	for _, t := range r.Topics {
		todo = append(todo, named{name: t.Topic, id: t.TopicID})
	}
	for _, t := range todo {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.TopicID = t.id
		name := ""
		if t.name != nil {
			name = *t.name
		} else if n, ok := s.meta.topicByID(t.id); ok {
			name = n
		} else {
			out.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		out.Topic = &name
		if id, err := s.meta.topicID(name); err == nil {
			out.TopicID = id
		}
		if err := s.deleteTopic(name); err != nil {
			out.ErrorCode = s.codeFor("delete topic", err)
			msg := err.Error()
			out.ErrorMessage = &msg
		} else {
			s.log.Info("topic deleted", "topic", name, "client", req.clientID)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return reply{msg: resp}, nil
}

// deleteTopic removes a topic, its committed offsets and its id.
func (s *Server) deleteTopic(name string) error {
	if err := s.store.DeleteTopic(name); err != nil {
		return err
	}
	s.meta.forget(name)
	if err := s.offsets.DeleteTopic(name); err != nil && !errors.Is(err, offsets.ErrInvalid) {
		return err
	}
	return nil
}
