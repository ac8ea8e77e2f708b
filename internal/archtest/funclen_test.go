package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every non-test function on the decision path, from
// its func line to its closing brace (docs/design.md, "Decisions").
const maxFuncLines = 100

// decisionPath are the packages on the decision path: the table and its
// call, the list executor, both reflectors and the watch pipeline.
var decisionPath = []string{"internal/engine", "lister", "reflector", "internal/dropin", "internal/watchpipe"}

// TestDecisionPathFunctionsAreShort fails when a non-test function of a
// decision-path package is longer than maxFuncLines lines: a long function
// there is where decisions get made outside the table.
func TestDecisionPathFunctionsAreShort(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, dir := range decisionPath {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				var body *ast.BlockStmt
				name := ""
				switch fn := n.(type) {
				case *ast.FuncDecl:
					body, name = fn.Body, fn.Name.Name
				case *ast.FuncLit:
					body, name = fn.Body, "func literal"
				default:
					return true
				}
				if body == nil {
					return true
				}
				checked++
				from, to := fset.Position(n.Pos()), fset.Position(body.Rbrace)
				if lines := to.Line - from.Line + 1; lines > maxFuncLines {
					t.Errorf("%s:%d: %s is %d lines, more than %d", filepath.ToSlash(strings.TrimPrefix(from.Filename, "../../")), from.Line, name, lines, maxFuncLines)
				}
				return true
			})
		}
	}
	t.Logf("%d functions checked", checked)
}
