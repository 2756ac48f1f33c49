package main

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionString says which build this is, from the build information the
// Go toolchain stamps into the binary (runtime/debug.ReadBuildInfo).
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	return describeBuild(bi, ok, runtime.Version())
}

// pseudoVersion matches the end of a Go pseudo-version
// (v0.0.0-20261202172351-09efd26e7c9c, optionally +dirty): a commit, not a
// release.
var pseudoVersion = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}(\+dirty)?$`)

// describeBuild formats the version of a build with build information bi
// (ok false: none) by Go goVersion:
//
//   - a release (go install ...@v0.3.0): its module version;
//   - a module download of a commit: its pseudo-version, which names the
//     commit;
//   - a build in a checkout (go build, make build): "(devel)", the VCS
//     revision ("+dirty" with uncommitted changes) and its commit time; a
//     checkout at a release tag keeps the release's version;
//   - a build in a checkout without VCS stamping (-buildvcs=false) says
//     so.
//
// The Go version comes last.
func describeBuild(bi *debug.BuildInfo, ok bool, goVersion string) string {
	if !ok || bi == nil {
		return "unknown (no build information), " + goVersion
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	v := bi.Main.Version
	if v == "" || (rev != "" && pseudoVersion.MatchString(v)) {
		// A checkout not at a release tag: the revision says which
		// commit, more plainly than the pseudo-version the go command
		// derives from it.
		v = "(devel)"
	}
	parts := []string{v}
	switch {
	case rev != "":
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
	case !strings.HasPrefix(v, "v"):
		parts = append(parts, "revision unknown (built without VCS stamping: go build -buildvcs=true)")
	}
	parts = append(parts, goVersion)
	return strings.Join(parts, ", ")
}

func versionCommand(e *env) *cobra.Command {
	return command(e, "version", "print the version and build of seglog", func(c *cli, pos []string) int {
		if len(pos) > 0 {
			return c.usageErr("unexpected argument %q", pos[0])
		}
		fmt.Fprintf(e.stdout, "seglog %s\n", versionString())
		return exitOK
	})
}
