package archtest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	graphBegin = "<!-- archtest:graph begin -->"
	graphEnd   = "<!-- archtest:graph end -->"
	arrow      = "─►"
)

// graphLine is one line of the drawn graph: the packages on its left and
// the packages they import.
type graphLine struct {
	planned bool     // marked *: a package being written; the line says what it may import
	deps    []string // sorted
	later   []string // arrows to packages being written (marked *): drawn, not required yet; sorted
}

// parseGraph reads the arrows between the graph markers of an
// ARCHITECTURE.md: lines "a, b ─► c d (a comment)", where a "*" after a
// name marks a package being written, "…" stands for "...", and "nothing
// of ours" for no import.
func parseGraph(md string) (map[string]graphLine, error) {
	text, err := between(md, graphBegin, graphEnd, "graph")
	if err != nil {
		return nil, err
	}
	graph := map[string]graphLine{}
	for _, l := range strings.Split(text, "\n") {
		left, right, ok := strings.Cut(l, arrow)
		if !ok {
			continue
		}
		right, _, _ = strings.Cut(right, "(")
		right = strings.ReplaceAll(right, "…", "...")
		var deps, later []string
		if strings.TrimSpace(right) != "nothing of ours" {
			for _, d := range strings.Fields(right) {
				if name, ok := strings.CutSuffix(d, "*"); ok {
					later = append(later, name)
				} else {
					deps = append(deps, d)
				}
			}
		}
		slices.Sort(deps)
		slices.Sort(later)
		for _, name := range strings.Split(left, ",") {
			name = strings.TrimSpace(name)
			planned := strings.HasSuffix(name, "*")
			name = strings.TrimSuffix(name, "*")
			if name == "" {
				return nil, fmt.Errorf("graph line %q: a package name is empty", l)
			}
			if _, dup := graph[name]; dup {
				return nil, fmt.Errorf("graph: a second line for %s", name)
			}
			graph[name] = graphLine{planned: planned, deps: deps, later: later}
		}
	}
	if len(graph) == 0 {
		return nil, fmt.Errorf("the graph between %q and %q has no arrows", graphBegin, graphEnd)
	}
	return graph, nil
}

// checkGraph returns every way the drawn graph differs from the code:
// a package outside internal/ without a line, an unmarked line that is
// not exactly what its package's non-test files import, a line for no
// package that is not marked as being written, and a marked line that its
// package's rule does not allow.
func checkGraph(graph map[string]graphLine, rules map[string]rule, pkgs map[string]pkgImports) []string {
	var out []string
	for pkg, imp := range pkgs {
		if pkg == "internal" || strings.HasPrefix(pkg, "internal/") {
			continue
		}
		if _, ok := graph[pkg]; !ok {
			out = append(out, fmt.Sprintf("the graph has no line for %s: add %q", pkg, pkg+" "+arrow+" "+depList(imp.imports)))
		}
	}
	for pkg, line := range graph {
		imp, exists := pkgs[pkg]
		switch {
		case line.planned:
			for _, d := range append(slices.Clone(line.deps), line.later...) {
				if !allows(rules[pkg].imports, d) {
					out = append(out, fmt.Sprintf("the graph draws %s %s %s, which its rule does not allow", pkg, arrow, d))
				}
			}
		case !exists:
			out = append(out, fmt.Sprintf("the graph draws %s, which is no package (mark it * if it is being written)", pkg))
		default:
			// The code imports what the line draws, and besides only
			// packages marked as being written.
			got := map[string]bool{}
			for d := range imp.imports {
				if !slices.Contains(line.later, d) {
					got[d] = true
				}
			}
			if depList(got) != strings.Join(line.deps, " ") {
				out = append(out, fmt.Sprintf("the graph draws %s %s %s; the code imports %s", pkg, arrow, orNothing(strings.Join(line.deps, " ")), orNothing(depList(imp.imports))))
			}
		}
	}
	slices.Sort(out)
	return out
}

// depList returns the packages of set, sorted, separated by spaces.
func depList(set map[string]bool) string {
	var deps []string
	for d := range set {
		deps = append(deps, d)
	}
	slices.Sort(deps)
	return strings.Join(deps, " ")
}

// orNothing returns s, or "nothing of ours" for no package.
func orNothing(s string) string {
	if s == "" {
		return "nothing of ours"
	}
	return s
}

// TestGraphIsTrue: the graph drawn in ARCHITECTURE.md has a line for every
// package outside internal/, and each line is what the package imports.
func TestGraphIsTrue(t *testing.T) {
	root, module := moduleRoot(t)
	md := readArchitecture(t, root)
	graph, err := parseGraph(md)
	require.NoError(t, err)
	rules, err := parseRules(md)
	require.NoError(t, err)
	pkgs, err := loadPackages(root, module)
	require.NoError(t, err)
	for _, v := range checkGraph(graph, rules, pkgs) {
		t.Error(v)
	}
}

// TestCheckGraphReportsDrift: a drawn arrow the code lacks, an import not
// drawn, a package without a line, a line for no package and a planned
// package's arrow its rule forbids are each reported; planned lines and
// internal packages are not held to the code.
func TestCheckGraphReportsDrift(t *testing.T) {
	graph, err := parseGraph("x\n" + graphBegin + "\n```\nstorage ─► segment vfs\ncmd ─► storage broker*\nsegment, index ─► vfs   (a comment)\nvfs ─► nothing of ours\nbroker* ─► storage internal/…\n```\n" + graphEnd)
	require.NoError(t, err)
	assert.Equal(t, map[string]graphLine{
		"storage": {deps: []string{"segment", "vfs"}},
		"segment": {deps: []string{"vfs"}},
		"index":   {deps: []string{"vfs"}},
		"vfs":     {},
		"broker":  {planned: true, deps: []string{"internal/...", "storage"}},
		"cmd":     {deps: []string{"storage"}, later: []string{"broker"}},
	}, graph)
	rules := map[string]rule{"broker": {imports: []string{"storage", "internal/..."}}}
	good := func() map[string]pkgImports {
		return map[string]pkgImports{
			"storage":      {imports: set("segment", "vfs"), tests: set("index")},
			"segment":      {imports: set("vfs"), tests: set()},
			"index":        {imports: set("vfs"), tests: set()},
			"vfs":          {imports: set(), tests: set()},
			"internal/kit": {imports: set("storage"), tests: set()},
			"cmd":          {imports: set("storage"), tests: set()},
		}
	}
	assert.Empty(t, checkGraph(graph, rules, good()))
	withBroker := good()
	withBroker["broker"] = pkgImports{imports: set("storage"), tests: set()}
	withBroker["cmd"].imports["broker"] = true
	assert.Empty(t, checkGraph(graph, rules, withBroker), "an arrow to a package being written may exist or not")

	pkgs := good()
	delete(pkgs["storage"].imports, "vfs")
	pkgs["index"].imports["segment"] = true
	pkgs["queue"] = pkgImports{imports: set("storage"), tests: set()}
	delete(pkgs, "vfs")
	assert.Equal(t, []string{
		"the graph draws index ─► vfs; the code imports segment vfs",
		"the graph draws storage ─► segment vfs; the code imports segment",
		"the graph draws vfs, which is no package (mark it * if it is being written)",
		`the graph has no line for queue: add "queue ─► storage"`,
	}, checkGraph(graph, rules, pkgs))

	rules["broker"] = rule{imports: []string{"storage"}}
	assert.Equal(t, []string{"the graph draws broker ─► internal/..., which its rule does not allow"}, checkGraph(graph, rules, good()))

	_, err = parseGraph("no markers")
	assert.ErrorContains(t, err, "no graph")
	_, err = parseGraph(graphBegin + "\nvfs ─► x\nvfs ─► y\n" + graphEnd)
	assert.ErrorContains(t, err, "a second line for vfs")
}

const (
	layersBegin = "<!-- archtest:layers begin -->"
	layersEnd   = "<!-- archtest:layers end -->"
)

// parseLayers reads the layer diagram between the layer markers: lines
// "N  pkg pkg* ...", returning each package's layer.
func parseLayers(md string) (map[string]int, error) {
	text, err := between(md, layersBegin, layersEnd, "layers")
	if err != nil {
		return nil, err
	}
	layers := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		for _, name := range f[1:] {
			name = strings.TrimSuffix(name, "*")
			if _, dup := layers[name]; dup {
				return nil, fmt.Errorf("layers: %s is drawn twice", name)
			}
			layers[name] = n
		}
	}
	if len(layers) == 0 {
		return nil, errors.New("the layer diagram has no layers")
	}
	return layers, nil
}

// checkLayers returns every arrow of the graph that does not point to a
// lower layer, and every package of the graph without a layer.
func checkLayers(layers map[string]int, graph map[string]graphLine) []string {
	var out []string
	for pkg, line := range graph {
		from, ok := layers[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("the layer diagram does not place %s", pkg))
			continue
		}
		for _, d := range append(slices.Clone(line.deps), line.later...) {
			if to, ok := layers[d]; ok && to >= from {
				out = append(out, fmt.Sprintf("%s (layer %d) %s %s (layer %d): not a lower layer", pkg, from, arrow, d, to))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestLayersPointDown: every package in the graph has a layer, and every
// arrow points to a lower one.
func TestLayersPointDown(t *testing.T) {
	root, _ := moduleRoot(t)
	md := readArchitecture(t, root)
	layers, err := parseLayers(md)
	require.NoError(t, err)
	graph, err := parseGraph(md)
	require.NoError(t, err)
	for _, v := range checkLayers(layers, graph) {
		t.Error(v)
	}

	bad := map[string]graphLine{"vfs": {deps: []string{"index"}}, "index": {deps: []string{"vfs"}}, "new": {}}
	assert.Equal(t, []string{
		"the layer diagram does not place new",
		"vfs (layer 0) ─► index (layer 1): not a lower layer",
	}, checkLayers(layers, bad))
}
