package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDescribeBuild: the version names a release by its module version, a
// downloaded commit by its pseudo-version, and a checkout by its revision,
// dirty flag and commit time.
func TestDescribeBuild(t *testing.T) {
	vcs := func(rev, modified, at string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.modified", Value: modified}, {Key: "vcs.time", Value: at}}
	}
	const rev = "09efd26e7c9cc0849d376cb95714f74e05df82cf"
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"release", "v0.3.0", nil, "v0.3.0, go1.26"},
		{"downloaded commit", "v0.0.0-20261202172351-09efd26e7c9c", nil, "v0.0.0-20261202172351-09efd26e7c9c, go1.26"},
		{"checkout, clean", "v0.0.0-20261202172351-09efd26e7c9c", vcs(rev, "false", "2026-12-02T17:23:51Z"),
			"(devel), revision 09efd26e7c9c, from 2026-12-02T17:23:51Z, go1.26"},
		{"checkout, uncommitted changes", "v0.0.0-20261202172351-09efd26e7c9c+dirty", vcs(rev, "true", "2026-12-02T17:23:51Z"),
			"(devel), revision 09efd26e7c9c+dirty, from 2026-12-02T17:23:51Z, go1.26"},
		{"checkout after a release tag", "v0.3.1-0.20261202172351-09efd26e7c9c", vcs(rev, "false", ""),
			"(devel), revision 09efd26e7c9c, go1.26"},
		{"checkout at a release tag", "v0.3.0", vcs(rev, "false", "2026-12-02T17:23:51Z"),
			"v0.3.0, revision 09efd26e7c9c, from 2026-12-02T17:23:51Z, go1.26"},
		{"checkout, older go command", "(devel)", vcs(rev, "true", ""), "(devel), revision 09efd26e7c9c+dirty, go1.26"},
		{"checkout without VCS stamping", "(devel)", nil,
			"(devel), revision unknown (built without VCS stamping: go build -buildvcs=true), go1.26"},
		{"no main module version", "", nil,
			"(devel), revision unknown (built without VCS stamping: go build -buildvcs=true), go1.26"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/seglog/seglog", Version: tc.version}, Settings: tc.settings}
			assert.Equal(t, tc.want, describeBuild(bi, true, "go1.26"))
		})
	}
	assert.Equal(t, "unknown (no build information), go1.26", describeBuild(nil, false, "go1.26"))
}
