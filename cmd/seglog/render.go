package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// printRows prints rows to out as JSON lines, or as a table: header and
// then the tab-separated cells of each row. A table without rows is its
// header with emptyHeader, else nothing.
func printRows[T any](c *cli, out io.Writer, rows []T, asJSON, emptyHeader bool, header string, cells func(T) string) int {
	w := bufio.NewWriter(out)
	if asJSON {
		for _, r := range rows {
			_ = writeJSONLine(w, r)
		}
	} else if len(rows) > 0 || emptyHeader {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, r := range rows {
			fmt.Fprintln(tw, cells(r))
		}
		tw.Flush()
	}
	if err := w.Flush(); err != nil {
		return c.fail("write output: %v", err)
	}
	return exitOK
}
