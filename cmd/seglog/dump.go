package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

type dumpOptions struct {
	records     bool
	maxValue    int
	verifyIndex bool
	json        bool
}

func dumpCommand(e *env) *cobra.Command {
	var o dumpOptions
	var dir, topic string
	var partition int
	cmd := command(e, "dump [flags] FILE...", "print the batches, records or entries of .log, .index and .timeindex files (read-only)", func(c *cli, files []string) int {
		if dir == "" && len(files) == 0 {
			return c.usageErr("no FILE given (or --dir)")
		}
		if dir == "" && (topic != "" || partition >= 0) {
			return c.usageErr("--topic and --partition need --dir")
		}
		if partition > math.MaxInt32 {
			return c.usageErr("--partition %d: want a partition number", partition)
		}
		if o.maxValue < 0 {
			return c.usageErr("--max-value-bytes %d is negative", o.maxValue)
		}
		for _, f := range files {
			if !strings.HasSuffix(f, segment.LogSuffix) && !strings.HasSuffix(f, segment.IndexSuffix) && !strings.HasSuffix(f, segment.TimeIndexSuffix) {
				return c.usageErr("%s: not a .log, .index or .timeindex file", f)
			}
		}
		if dir != "" {
			if err := requireDir(dir); err != nil {
				return c.fail("%v", err)
			}
			more, err := storage.LogFiles(dir, topic, int32(partition))
			if errors.Is(err, storage.ErrDataRoot) {
				return c.usageErr("--dir %s holds partition directories: say which --topic to dump", dir)
			} else if err != nil {
				return c.fail("%v", err)
			}
			files = append(more, files...)
		}
		w := bufio.NewWriterSize(e.stdout, 256<<10)
		d := &dumper{w: w, stderr: e.stderr, o: o, name: c.name}
		for _, f := range files {
			d.file(f)
		}
		if err := w.Flush(); err != nil {
			return c.fail("write output: %v", err)
		}
		if d.problems > 0 {
			return exitFailure
		}
		return exitOK
	})
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "dump every .log of a partition directory, or of --topic's partitions in a data directory")
	f.StringVar(&topic, "topic", "", "with --dir DATA: the topic whose segments to dump")
	f.IntVar(&partition, "partition", -1, "with --dir DATA --topic T: only this partition (-1: all)")
	f.BoolVar(&o.records, "records", false, "print every record of each batch of a .log")
	f.IntVar(&o.maxValue, "max-value-bytes", 256, "cut keys, values and header values longer than this in --records output (0: never)")
	f.BoolVar(&o.verifyIndex, "verify-index", false, "print what storage.Check finds wrong with each segment's .index and .timeindex")
	f.BoolVar(&o.json, "json", false, "print JSON lines instead of text")
	completeTopics(cmd, &dir)
	return cmd
}

// dumper writes dump output; it counts the problems it reported.
type dumper struct {
	w        *bufio.Writer
	stderr   io.Writer
	o        dumpOptions
	name     string
	problems int

	checks map[string]storage.Report // storage.Check of each directory, by path
}

// errorJSON is a problem as dump --json prints it.
type errorJSON struct {
	Position *int64 `json:"position,omitempty"`
	Error    string `json:"error"`
}

// jsonLine writes v as a line of dump --json: an object whose first
// fields say what the line is (typ) and of which file, then v's fields.
func (d *dumper) jsonLine(typ, file string, v any) {
	line, _ := json.Marshal(struct {
		Type string `json:"type"`
		File string `json:"file"`
	}{typ, file})
	if fields, _ := json.Marshal(v); len(fields) > 2 { // the two objects joined: drop "}{", put ","
		line = append(append(line[:len(line)-1], ','), fields[1:]...)
	}
	_, _ = d.w.Write(append(line, '\n'))
}

// problem reports damage at pos of file (pos < 0: no position) on stderr
// and, with --json, in the output too.
func (d *dumper) problem(file string, pos int64, msg string) {
	d.problems++
	if d.o.json {
		ej := errorJSON{Error: msg}
		if pos >= 0 {
			ej.Position = &pos
		}
		d.jsonLine("error", file, ej)
	}
	_ = d.w.Flush() // so that the error follows what was dumped before it
	fmt.Fprintf(d.stderr, "%s: %s\n", d.name, msg)
}

func (d *dumper) file(path string) {
	switch {
	case strings.HasSuffix(path, segment.LogSuffix):
		w, err := storage.OpenLogWalk(path)
		if err != nil {
			d.problem(path, -1, fileErrOf(path, err).Error())
			return
		}
		defer w.Close()
		d.log(w.Walk, path, w.HeldEnd)
		if d.o.verifyIndex {
			d.indexCheck(path)
		}
	case strings.HasSuffix(path, segment.IndexSuffix), strings.HasSuffix(path, segment.TimeIndexSuffix):
		d.index(path)
		if d.o.verifyIndex {
			d.indexCheck(siblingPath(path, segment.LogSuffix))
		}
	}
}

// log dumps the .log that s walks. It never panics on any bytes: every
// decoding is the segment package's hostile-input-safe decoders. tail is
// where a writer's tail begins when s stops there (storage.LogWalk).
func (d *dumper) log(s *segment.Walk, path string, tail int64) {
	if !d.o.json {
		fmt.Fprintf(d.w, "Dumping %s\n", path)
		if b, ok := segment.BaseOf(path); ok {
			fmt.Fprintf(d.w, "Log starting offset: %d\n", b)
		}
	}
	var it segment.RecordIter
	for s.Next() {
		h, pos := s.Header, s.Pos
		valid := s.VerifyErr == nil
		if d.o.json {
			d.jsonLine("batch", path, segment.NewBatchJSON(h, pos, valid))
		} else {
			fmt.Fprintln(d.w, segment.KafkaBatchLine(h, pos, valid))
		}
		if !valid {
			d.problem(path, pos, fmt.Sprintf("%s at byte %d: batch at offset %d: %v", path, pos, h.BaseOffset, s.VerifyErr))
		}
		if d.o.records && valid {
			d.records(&it, s.Batch, path, pos)
		}
	}
	if s.Stopped() {
		d.note(path, fmt.Sprintf("%s: held by a writer: read up to offset %d, the last whole batch a read-only follower sees; the tail being written is not judged", path, tail))
		return
	}
	if err := s.Err(); err != nil {
		d.problem(path, s.End(), err.Error())
	}
}

// note says something on stderr (and, with --json, in the output) that
// is not a problem.
func (d *dumper) note(file, msg string) {
	if d.o.json {
		d.jsonLine("note", file, struct {
			Note string `json:"note"`
		}{msg})
	}
	_ = d.w.Flush()
	fmt.Fprintf(d.stderr, "%s: %s\n", d.name, msg)
}

func (d *dumper) records(it *segment.RecordIter, batch []byte, path string, pos int64) {
	if err := it.Reset(batch, segment.DefaultLimits); err != nil {
		d.problem(path, pos, fmt.Sprintf("%s at byte %d: %v", path, pos, err))
		return
	}
	for it.Next() {
		r := it.Record()
		if d.o.json {
			rj := segment.NewRecordJSON(r, d.o.maxValue)
			if r.Value != nil {
				n := len(r.Value)
				rj.ValueSize = &n
			}
			d.jsonLine("record", path, rj)
			continue
		}
		fmt.Fprintln(d.w, segment.KafkaRecordLine(it.Header(), r, d.o.maxValue))
	}
	if err := it.Err(); err != nil {
		d.problem(path, pos, fmt.Sprintf("%s at byte %d: batch at offset %d: %v", path, pos, it.Header().BaseOffset, err))
	}
}

type indexCheckJSON struct {
	Type     string   `json:"type"`
	Log      string   `json:"log"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
}

// indexCheck prints what storage.Check finds wrong with the indexes of the
// segment whose .log is logPath (Check runs once per directory).
func (d *dumper) indexCheck(logPath string) {
	dir := filepath.Dir(logPath)
	rep, ok := d.checks[dir]
	if !ok {
		var err error
		rep, err = storage.Check(dir, storage.CheckOptions{})
		if err != nil {
			d.problem(logPath, -1, fmt.Sprintf("--verify-index: %v", err))
			return
		}
		if d.checks == nil {
			d.checks = map[string]storage.Report{}
		}
		d.checks[dir] = rep
	}
	problems := []string{}
	for _, p := range rep.Problems {
		if p.Kind == storage.ProblemIndex && filepath.Clean(p.File) == filepath.Clean(logPath) {
			problems = append(problems, p.What)
		}
	}
	if d.o.json {
		_ = writeJSONLine(d.w, indexCheckJSON{Type: "index_check", Log: logPath, OK: len(problems) == 0, Problems: problems})
	} else {
		status := "ok"
		if n := len(problems); n > 0 {
			status = plural(int64(n), "problem") + ", see stderr"
		}
		fmt.Fprintf(d.w, "Index check of %s: %s\n", logPath, status)
	}
	_ = d.w.Flush()
	for _, p := range problems {
		d.problems++
		fmt.Fprintf(d.stderr, "%s: %s\n", d.name, p)
	}
}

// offsetEntryJSON and timeEntryJSON are index entries as dump --json
// prints them.
type offsetEntryJSON struct {
	Entry    int   `json:"entry"`
	Offset   int64 `json:"offset"`
	Position int64 `json:"position"`
}

type timeEntryJSON struct {
	Entry     int   `json:"entry"`
	Timestamp int64 `json:"timestamp"`
	Offset    int64 `json:"offset"`
}

// index dumps an .index or .timeindex file with the segment package's
// index decoders.
func (d *dumper) index(path string) {
	c, err := segment.ReadIndexFile(path)
	if err != nil {
		d.problem(path, -1, fileErrOf(path, err).Error())
		return
	}
	base, named := segment.BaseOf(path)
	if !named {
		fmt.Fprintf(d.stderr, "%s: %s: the file name is not a segment name (20 digits of base offset): offsets are shown relative to 0\n", d.name, path)
	}
	isTime := strings.HasSuffix(path, segment.TimeIndexSuffix)
	if !d.o.json {
		kind := "offset index"
		if isTime {
			kind = "time index"
		}
		fmt.Fprintf(d.w, "Dumping %s (%s, base offset %d)\n", path, kind, base)
	}
	var used int
	if isTime {
		used = len(c.Times)
		for i, e := range c.Times {
			if d.o.json {
				d.jsonLine("time_index_entry", path, timeEntryJSON{Entry: i, Timestamp: e.Timestamp, Offset: e.Offset})
			} else {
				fmt.Fprintf(d.w, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
			}
		}
	} else {
		used = len(c.Offsets)
		for i, e := range c.Offsets {
			if d.o.json {
				d.jsonLine("offset_index_entry", path, offsetEntryJSON{Entry: i, Offset: e.Offset, Position: e.Position})
			} else {
				fmt.Fprintf(d.w, "offset: %d position: %d\n", e.Offset, e.Position)
			}
		}
	}
	if !d.o.json && c.Entries > used {
		fmt.Fprintf(d.w, "(%s: preallocated space of an active segment)\n", plural(int64(c.Entries-used), "unused all-zero entry"))
	}
	if c.Tail != nil {
		d.problem(path, int64(used*c.EntrySize), fmt.Sprintf("%s: %v", path, c.Tail))
	}
	if c.Err != nil {
		d.problem(path, int64(c.Entries*c.EntrySize), fmt.Sprintf("%s at byte %d: %v", path, c.Entries*c.EntrySize, c.Err))
	}
}

// dumpLogBytes dumps the bytes of a .log as if read from a file named
// name: the fuzz target's entry point.
func dumpLogBytes(w, stderr io.Writer, data []byte, name string, o dumpOptions) int {
	bw := bufio.NewWriter(w)
	d := &dumper{w: bw, stderr: stderr, o: o, name: "seglog dump"}
	d.log(segment.NewWalk(bytes.NewReader(data), int64(len(data)), name), name, -1)
	_ = bw.Flush()
	return d.problems
}
