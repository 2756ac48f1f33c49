package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionString says which build this is, from runtime/debug.ReadBuildInfo:
// the module version ("(devel)" for a build in the source tree), the VCS
// revision and time, "+dirty" for uncommitted changes, and the Go version.
// A build without VCS stamping (go build -buildvcs=false, or from a
// module download) says so.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information) " + runtime.Version()
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	parts = append(parts, v)
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "+dirty"
		}
		parts = append(parts, "revision "+rev)
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, "from "+t)
		}
	} else if !strings.HasPrefix(v, "v") {
		parts = append(parts, "revision unknown (built without VCS stamping: go build -buildvcs=true)")
	}
	parts = append(parts, runtime.Version())
	return strings.Join(parts, ", ")
}

func versionCommand(e *env) *cobra.Command {
	return command(e, "version", "print the version and build of seglog", `
Print the module version, the VCS revision and commit time this binary was
built from ("+dirty": with uncommitted changes), and the Go version; the
same as seglog --version.`, "seglog version",
		func(c *cli, pos []string) int {
			if len(pos) > 0 {
				return c.usageErr("unexpected argument %q", pos[0])
			}
			fmt.Fprintf(e.stdout, "seglog %s\n", versionString())
			return exitOK
		})
}
