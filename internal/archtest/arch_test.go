package archtest

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	beginMarker = "<!-- archtest:rules begin -->"
	endMarker   = "<!-- archtest:rules end -->"
)

// rule is one row of the table: what a package's code may import of the
// module, and what its tests may import besides.
type rule struct {
	imports []string // package paths relative to the module root, or "dir/..." patterns
	tests   []string
}

// pkgImports is what one package's files import of the module, by kind of
// file: non-test files, and _test.go files (in-package and external).
type pkgImports struct {
	imports map[string]bool
	tests   map[string]bool
}

var tokenRE = regexp.MustCompile("`([^`]+)`")

// parseRules reads the rules table out of an ARCHITECTURE.md: the rows of
// a Markdown table between the two markers, each "| `pkg` | `a` `b` |
// `c` |" (a package, what its code may import, what its tests may import
// besides). An empty cell allows nothing.
func parseRules(md string) (map[string]rule, error) {
	table, err := between(md, beginMarker, endMarker, "rules table")
	if err != nil {
		return nil, err
	}
	rules := map[string]rule{}
	sc := bufio.NewScanner(strings.NewReader(table))
	line := 0
	for sc.Scan() {
		line++
		row := strings.TrimSpace(sc.Text())
		if row == "" || !strings.HasPrefix(row, "|") || strings.HasPrefix(row, "| ---") || strings.HasPrefix(row, "| package") {
			continue
		}
		cells := strings.Split(strings.Trim(row, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("rules table line %d: %d cells, want 3 (package, imports, tests also import): %q", line, len(cells), row)
		}
		name := tokens(cells[0])
		if len(name) != 1 {
			return nil, fmt.Errorf("rules table line %d: the first cell names %d packages, want one: %q", line, len(name), row)
		}
		if _, dup := rules[name[0]]; dup {
			return nil, fmt.Errorf("rules table line %d: a second rule for %s", line, name[0])
		}
		rules[name[0]] = rule{imports: tokens(cells[1]), tests: tokens(cells[2])}
	}
	if len(rules) == 0 {
		return nil, errors.New("the rules table has no rows")
	}
	return rules, nil
}

// between returns the text of md between the markers begin and end; what
// names it in the error when they are missing.
func between(md, begin, end, what string) (string, error) {
	b := strings.Index(md, begin)
	e := strings.Index(md, end)
	if b < 0 || e < b {
		return "", fmt.Errorf("no %s between %q and %q", what, begin, end)
	}
	return md[b+len(begin) : e], nil
}

// set returns the set of names.
func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// tokens returns the backquoted names in a table cell.
func tokens(cell string) []string {
	var out []string
	for _, m := range tokenRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// allows reports whether the list of allowed packages and patterns
// admits pkg.
func allows(allowed []string, pkg string) bool {
	for _, a := range allowed {
		if prefix, ok := strings.CutSuffix(a, "/..."); ok {
			if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
				return true
			}
		} else if a == pkg {
			return true
		}
	}
	return false
}

// check returns every violation of rules by pkgs, sorted: a package
// without a rule, an import its rule does not allow, a name in a rule
// that is neither a package nor the subject of a rule (a typo would
// otherwise allow nothing unnoticed).
func check(rules map[string]rule, pkgs map[string]pkgImports) []string {
	var out []string
	for pkg, imp := range pkgs {
		r, ok := rules[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no rule in ARCHITECTURE.md's rules table", pkg))
			continue
		}
		for dep := range imp.imports {
			if !allows(r.imports, dep) {
				out = append(out, fmt.Sprintf("%s imports %s: its rule does not allow it", pkg, dep))
			}
		}
		for dep := range imp.tests {
			if dep != pkg && !allows(r.imports, dep) && !allows(r.tests, dep) {
				out = append(out, fmt.Sprintf("%s's tests import %s: its rule does not allow it", pkg, dep))
			}
		}
	}
	for pkg, r := range rules {
		for _, name := range append(slices.Clone(r.imports), r.tests...) {
			base, pattern := strings.CutSuffix(name, "/...")
			_, isPkg := pkgs[base]
			_, isRule := rules[base]
			if isPkg || isRule || pattern && hasPackageUnder(pkgs, base) {
				continue
			}
			out = append(out, fmt.Sprintf("the rule of %s names %s, which is no package", pkg, name))
		}
	}
	slices.Sort(out)
	return out
}

// hasPackageUnder reports whether a package lies under dir.
func hasPackageUnder(pkgs map[string]pkgImports, dir string) bool {
	for p := range pkgs {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// loadPackages reads the import declarations of every Go file under the
// module root (except testdata and hidden directories), whatever its
// build constraints, and returns each package's imports of the module,
// by path relative to the root ("." for the root itself).
func loadPackages(root, module string) (map[string]pkgImports, error) {
	pkgs := map[string]pkgImports{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		imp, ok := pkgs[pkg]
		if !ok {
			imp = pkgImports{imports: map[string]bool{}, tests: map[string]bool{}}
			pkgs[pkg] = imp
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			var dep string
			switch {
			case p == module:
				dep = "."
			case strings.HasPrefix(p, module+"/"):
				dep = strings.TrimPrefix(p, module+"/")
			default:
				continue
			}
			if strings.HasSuffix(name, "_test.go") {
				imp.tests[dep] = true
			} else {
				imp.imports[dep] = true
			}
		}
		return nil
	})
	return pkgs, err
}

// moduleRoot returns the directory of the go.mod above the working
// directory and the module path it declares.
func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			require.Fail(t, "go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the working directory")
		dir = parent
	}
}

// readArchitecture returns the text of the module's ARCHITECTURE.md.
func readArchitecture(t *testing.T, root string) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	require.NoError(t, err)
	return string(md)
}

// TestImportsFollowArchitecture: every package of the module has a rule in
// ARCHITECTURE.md, and its files and its tests import only what the rule
// allows.
func TestImportsFollowArchitecture(t *testing.T) {
	root, module := moduleRoot(t)
	rules, err := parseRules(readArchitecture(t, root))
	require.NoError(t, err)
	pkgs, err := loadPackages(root, module)
	require.NoError(t, err)
	require.Contains(t, pkgs, "storage", "the walk of the module found no storage package")
	require.Contains(t, pkgs, "internal/archtest")
	for _, v := range check(rules, pkgs) {
		t.Error(v)
	}
	for pkg := range rules {
		if _, ok := pkgs[pkg]; !ok {
			t.Logf("rule for %s, a package not written yet", pkg)
		}
	}
}

// TestCheckReportsWrongArrows: the checker reports an import the rule does
// not allow (in code or in tests), a package without a rule and a rule
// naming no package, and accepts what the rules allow.
func TestCheckReportsWrongArrows(t *testing.T) {
	const table = beginMarker + `
| package | imports | tests also import |
| --- | --- | --- |
| ` + "`vfs`" + ` | | |
| ` + "`index`" + ` | ` + "`vfs`" + ` | ` + "`internal/...`" + ` |
| ` + "`storage`" + ` | ` + "`index` `vfs`" + ` | |
| ` + "`internal/kit`" + ` | | |
| ` + "`planned`" + ` | ` + "`storage`" + ` | |
` + endMarker
	rules, err := parseRules("# title\n\nprose\n\n" + table + "\n\nmore prose\n")
	require.NoError(t, err)
	good := func() map[string]pkgImports {
		return map[string]pkgImports{
			"vfs":          {imports: set(), tests: set("vfs")},
			"index":        {imports: set("vfs"), tests: set("index", "internal/kit")},
			"storage":      {imports: set("index", "vfs"), tests: set("storage", "vfs")},
			"internal/kit": {imports: set(), tests: set()},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(map[string]pkgImports)
		want   []string
	}{
		{"what the rules allow", func(map[string]pkgImports) {}, nil},
		{"a wrong arrow in code", func(p map[string]pkgImports) { p["index"].imports["storage"] = true },
			[]string{"index imports storage: its rule does not allow it"}},
		{"a wrong arrow in a test", func(p map[string]pkgImports) { p["vfs"].tests["index"] = true },
			[]string{"vfs's tests import index: its rule does not allow it"}},
		{"a test-only import in code", func(p map[string]pkgImports) { p["index"].imports["internal/kit"] = true },
			[]string{"index imports internal/kit: its rule does not allow it"}},
		{"a package without a rule", func(p map[string]pkgImports) {
			p["queue"] = pkgImports{imports: set("storage"), tests: set()}
		}, []string{"queue has no rule in ARCHITECTURE.md's rules table"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkgs := good()
			tc.change(pkgs)
			assert.Equal(t, tc.want, check(rules, pkgs))
		})
	}

	rules["storage"] = rule{imports: []string{"index", "vfs", "segmnet"}}
	assert.Equal(t, []string{"the rule of storage names segmnet, which is no package"}, check(rules, good()))
}

// TestParseRulesRefusesMalformedTables: a missing table, a row with the
// wrong number of cells or without one package, and a second rule for a
// package are errors, not an empty or partial rule set.
func TestParseRulesRefusesMalformedTables(t *testing.T) {
	row := func(s string) string {
		return beginMarker + "\n| package | imports | tests also import |\n| --- | --- | --- |\n" + s + "\n" + endMarker
	}
	for _, tc := range []struct{ name, md, want string }{
		{"no markers", "| `vfs` | | |", "no rules table"},
		{"end before begin", endMarker + beginMarker, "no rules table"},
		{"no rows", row(""), "no rows"},
		{"two cells", row("| `vfs` | |"), "2 cells"},
		{"no package", row("| vfs | | |"), "names 0 packages"},
		{"two packages", row("| `vfs` `index` | | |"), "names 2 packages"},
		{"duplicate", row("| `vfs` | | |\n| `vfs` | `index` | |"), "a second rule for vfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRules(tc.md)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
