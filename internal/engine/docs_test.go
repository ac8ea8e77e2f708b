package engine_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/internal/reason"
)

var update = flag.Bool("update", false, "rewrite docs/rules.md's table section and docs/troubleshooting.md from the code")

const (
	beginTable = "<!-- BEGIN GENERATED: decision table (go test ./internal/engine -update) -->"
	endTable   = "<!-- END GENERATED: decision table -->"
)

// TestDocsAreGenerated keeps docs/rules.md's decision table in step with
// the code: it fails when they differ; -update rewrites it.
func TestDocsAreGenerated(t *testing.T) {
	var tb bytes.Buffer
	fmt.Fprintln(&tb, beginTable)
	fmt.Fprintln(&tb, "| # | when | action | wait | reason | source |")
	fmt.Fprintln(&tb, "|---|---|---|---|---|---|")
	reflectorReasons := reason.By(reason.Reflector)
	for i, r := range engine.Rows() {
		action := r.Action.String()
		if r.Then != engine.ThenByAction {
			action += ": " + r.Then.String()
		}
		fmt.Fprintf(&tb, "| %d | %s | %s | %s | `%s` | %s |\n", i, r.Pattern(), action, r.Wait, r.Reason, strings.ReplaceAll(r.Source, "|", `\|`))
		dropIn := strings.HasPrefix(r.Pattern(), "op=dropin-")
		if dropIn && r.Reason != reason.OK && !slices.Contains(reason.By(reason.DropIn), r.Reason) {
			t.Errorf("row %d: reason %q is not one of the drop-in's", i, r.Reason)
		}
		// A list plan's rows choose the request; they record no transition
		// of their own (reason ok).
		plan := strings.HasPrefix(r.Pattern(), "op=list-plan")
		if plan && r.Reason != reason.OK {
			t.Errorf("row %d: a list plan's reason %q is not ok", i, r.Reason)
		}
		if !dropIn && !plan && r.Wait != engine.WaitByAction && !slices.Contains(reflectorReasons, r.Reason) {
			t.Errorf("row %d: reason %q is not one of package reflector's", i, r.Reason)
		}
	}
	fmt.Fprint(&tb, endTable)
	rules := readDoc(t, "rules.md")
	i, j := strings.Index(rules, beginTable), strings.Index(rules, endTable)
	if i < 0 || j < i {
		t.Fatalf("docs/rules.md has no generated section (%q ... %q)", beginTable, endTable)
	}
	checkDoc(t, "rules.md", rules[:i]+tb.String()+rules[j+len(endTable):])

}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/" + name)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func checkDoc(t *testing.T, name, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile("../../docs/"+name, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := readDoc(t, name); got != want {
		t.Errorf("docs/%s is not what the code generates; run go test ./internal/engine -update", name)
	}
}
