package queue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/queue"
	"github.com/seglog/seglog/storage"
)

func TestListNamesTheTopicsThatAreQueues(t *testing.T) {
	e := newEnv(t)
	assert.Empty(t, queue.List(e.store, e.ost))
	e.open(queue.Options{})
	require.NoError(t, e.store.CreateTopic("plain", 1, storage.TopicConfig{}))
	require.NoError(t, e.ost.Commit("readers", "plain", 0, 0, ""))
	assert.Equal(t, []string{"jobs"}, queue.List(e.store, e.ost), "a topic other groups read is not a queue")
}
