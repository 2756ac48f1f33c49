package offsets

// position is one committed offset.
type position struct {
	offset   int64
	time     int64 // unix nanoseconds
	metadata string
}

// topicState is a group's interest in a topic and its positions there.
type topicState struct {
	parts map[int32]position
}

type groupState struct {
	name   string
	topics map[string]*topicState // never empty
}

// state is the in-memory image of the store: what replaying the snapshot
// and the journals gives. It is not safe for concurrent use; Store guards it.
type state struct {
	groups  map[string]*groupState
	readers map[string]map[string]struct{} // topic -> groups with interest
	entries int                            // number of positions
}

func newState(groups int) *state {
	return &state{
		groups:  make(map[string]*groupState, groups),
		readers: make(map[string]map[string]struct{}),
	}
}

// group returns the named group, creating it.
func (st *state) group(name []byte) *groupState {
	if g, ok := st.groups[string(name)]; ok {
		return g
	}
	g := &groupState{name: string(name), topics: make(map[string]*topicState, 1)}
	st.groups[g.name] = g
	return g
}

// topic returns g's state for the topic, registering interest.
func (st *state) topic(g *groupState, name []byte) *topicState {
	if t, ok := g.topics[string(name)]; ok {
		return t
	}
	return st.addTopic(g, name, 0)
}

func (st *state) addTopic(g *groupState, name []byte, hint int) *topicState {
	t := &topicState{parts: make(map[int32]position, hint)}
	tname := string(name)
	g.topics[tname] = t
	r := st.readers[tname]
	if r == nil {
		r = make(map[string]struct{}, 1)
		st.readers[tname] = r
	}
	r[g.name] = struct{}{}
	return t
}

func (st *state) removeTopic(g *groupState, tname string) {
	t := g.topics[tname]
	if t == nil {
		return
	}
	st.entries -= len(t.parts)
	delete(g.topics, tname)
	if r := st.readers[tname]; r != nil {
		delete(r, g.name)
		if len(r) == 0 {
			delete(st.readers, tname)
		}
	}
	if len(g.topics) == 0 {
		delete(st.groups, g.name)
	}
}

// deleteTopic removes every group's interest in the topic and positions
// there.
func (st *state) deleteTopic(tname string) {
	for gname := range st.readers[tname] {
		st.removeTopic(st.groups[gname], tname)
	}
}

func (st *state) deleteGroup(g *groupState) {
	for tname := range g.topics {
		st.removeTopic(g, tname)
	}
	delete(st.groups, g.name)
}

// decodeRecord checks the type and body of a journal record (the bytes after
// the length) and, when st is not nil, applies it. It returns "" or the
// reason the record is malformed. Given a malformed record with a state it
// may apply part of it, so callers apply only records that decodeRecord(nil,
// rec) accepted or that this package encoded.
func decodeRecord(st *state, rec []byte) string {
	return decodeBody(st, &decbuf{b: rec})
}

// decodeBody is decodeRecord on a decbuf (which may claim more bytes than
// it holds: see tornAt).
func decodeBody(st *state, d *decbuf) string {
	switch d.u8() {
	case recCommit:
		gname := d.name()
		ts := int64(d.u64())
		n := d.count(minEntryBytes)
		if d.err == "" && n == 0 {
			d.fail("commit record with no entries")
		}
		var g *groupState
		if st != nil && d.err == "" {
			g = st.group(gname)
		}
		for range n {
			tname := d.name()
			p := d.partition()
			off := d.offset()
			md := d.str()
			if d.err != "" {
				break
			}
			if st == nil {
				continue
			}
			t := st.topic(g, tname)
			old, had := t.parts[p]
			pos := position{offset: off, time: ts, metadata: old.metadata}
			if old.metadata != string(md) {
				pos.metadata = string(md)
			}
			t.parts[p] = pos
			if !had {
				st.entries++
			}
		}
	case recDeleteGroup:
		gname := d.name()
		d.end()
		if st != nil && d.err == "" {
			if g := st.groups[string(gname)]; g != nil {
				st.deleteGroup(g)
			}
		}
	case recSubscribe:
		gname, tname := d.name(), d.name()
		d.end()
		if st != nil && d.err == "" {
			st.topic(st.group(gname), tname)
		}
	case recUnsubscribe:
		gname, tname := d.name(), d.name()
		d.end()
		if st != nil && d.err == "" {
			if g := st.groups[string(gname)]; g != nil {
				st.removeTopic(g, string(tname))
			}
		}
	case recDeleteTopic:
		tname := d.name()
		d.end()
		if st != nil && d.err == "" {
			st.deleteTopic(string(tname))
		}
	default:
		d.fail("unknown record type")
	}
	d.end()
	return d.err
}
