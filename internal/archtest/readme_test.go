package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// funcBody returns the source lines of the body of function name in the
// file src, each trimmed of its indentation, without blank lines and
// without the "// Output:" comment of an example; and the file's import
// paths.
func funcBody(t *testing.T, filename, src, name string) (body, imports []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.ParseComments)
	require.NoError(t, err, "%s does not parse", filename)
	for _, spec := range f.Imports {
		imports = append(imports, strings.Trim(spec.Path.Value, `"`))
	}
	slices.Sort(imports)
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name || fn.Recv != nil {
			continue
		}
		text := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
		inOutput := false
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "// Output:") {
				inOutput = true
			}
			if l == "" || inOutput {
				continue
			}
			body = append(body, l)
		}
		return body, imports
	}
	require.Failf(t, "no function", "%s has no func %s", filename, name)
	return nil, nil
}

// exampleOutput returns the lines of the "// Output:" comment of function
// name in src.
func exampleOutput(src, name string) []string {
	_, after, _ := strings.Cut(src, "func "+name+"()")
	_, out, _ := strings.Cut(after, "// Output:\n")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "//")
		if !ok {
			break
		}
		lines = append(lines, strings.TrimPrefix(rest, " "))
	}
	return lines
}

// fencedBlock is a fenced code block of a Markdown file: its info string
// (the language after the fence) and its lines.
type fencedBlock struct {
	info  string
	lines []string
}

// fencedBlocks returns the fenced code blocks of md in order.
func fencedBlocks(md string) []fencedBlock {
	var out []fencedBlock
	var cur *fencedBlock
	for _, l := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &fencedBlock{info: strings.TrimPrefix(l, "```")}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return out
}

// TestReadmeProgramIsTheStorageExample: the program in README.md is the
// body of storage's Example (which go test compiles, runs and checks), with
// the same imports, and the output README shows is the Example's.
func TestReadmeProgramIsTheStorageExample(t *testing.T) {
	root, _ := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	example, err := os.ReadFile(filepath.Join(root, "storage", "example_test.go"))
	require.NoError(t, err)

	blocks := fencedBlocks(string(readme))
	at := slices.IndexFunc(blocks, func(b fencedBlock) bool {
		return b.info == "go" && len(b.lines) > 0 && b.lines[0] == "package main"
	})
	require.GreaterOrEqual(t, at, 0, "README.md has no Go program (a ```go block starting with package main)")
	require.Less(t, at+1, len(blocks), "README.md shows no output after its program")
	program := blocks[at].lines
	gotBody, gotImports := funcBody(t, "README.md", strings.Join(program, "\n")+"\n", "main")
	wantBody, wantImports := funcBody(t, "storage/example_test.go", string(example), "Example")
	assert.Equal(t, wantBody, gotBody, "README's program differs from storage.Example: copy the Example's body into it")
	assert.Equal(t, wantImports, gotImports, "README's program imports differ from storage/example_test.go's")

	wantOut := exampleOutput(string(example), "Example")
	require.NotEmpty(t, wantOut, "storage.Example has no // Output: comment")
	gotOut := blocks[at+1].lines
	assert.Equal(t, wantOut, gotOut, "the output README shows after its program differs from storage.Example's")
}
