package queue

import (
	"slices"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
)

// List returns the queues of a data directory: the topics of store that
// Group reads in ost (has committed on or subscribed to), in the order of
// store.Topics.
func List(store *storage.Store, ost *offsets.Store) []string {
	var names []string
	for _, t := range store.Topics() {
		if slices.Contains(ost.Readers(t.Name), Group) {
			names = append(names, t.Name)
		}
	}
	return names
}
