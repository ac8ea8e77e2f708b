package engine_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/internal/engine"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

var update = flag.Bool("update", false, "rewrite docs/rules.md's table section and docs/reasons.md from the code")

const (
	beginTable = "<!-- BEGIN GENERATED: decision table (go test ./internal/engine -update) -->"
	endTable   = "<!-- END GENERATED: decision table -->"
)

// TestDocsAreGenerated keeps docs/rules.md's decision table and
// docs/reasons.md (the complete set of metric label values) in step with
// the code: it fails when they differ; -update rewrites them.
func TestDocsAreGenerated(t *testing.T) {
	var tb bytes.Buffer
	fmt.Fprintln(&tb, beginTable)
	fmt.Fprintln(&tb, "| # | when | action | wait | reason | source |")
	fmt.Fprintln(&tb, "|---|---|---|---|---|---|")
	reflectorReasons := reflector.Reasons()
	for i, r := range engine.Rows() {
		fmt.Fprintf(&tb, "| %d | %s | %s | %s | `%s` | %s |\n", i, r.Pattern(), r.Action, r.Wait, r.Reason, strings.ReplaceAll(r.Source, "|", `\|`))
		if r.Wait != engine.WaitByAction && !slices.Contains(reflectorReasons, string(r.Reason)) {
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

	var rb bytes.Buffer
	fmt.Fprint(&rb, reasonsHeader)
	section := func(title, intro, metric string, codes []string) {
		fmt.Fprintf(&rb, "\n## %s\n\n%s\n\nMetric label: %s.\n\n", title, intro, metric)
		for _, c := range codes {
			fmt.Fprintf(&rb, "- `%s`\n", c)
		}
	}
	var list []string
	for _, c := range fallback.ListReasons() {
		list = append(list, string(c))
	}
	section("Lists (package lister)", "The reason of every fallback.Event and lister *Error: a row of the decision table (docs/rules.md) or a condition of the call.",
		"`reason` of `steadywatch_fallbacks_total`", list)
	section("Drop-in ListerWatcher (package lister)", "What the ListerWatcher under client-go's own reflector (the drop-in informer) counts.",
		"`cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total` and of `steadywatch_fallbacks_total`",
		lister.ListerWatcherReasons())
	section("Reflector (package reflector)", "Why the reflector's state machine moved, relisted or restarted a watch.",
		"`reason` of `steadywatch_transitions_total`, `cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total`",
		reflector.Reasons())
	var cr []string
	for _, c := range compat.ReasonCodes() {
		cr = append(cr, string(c))
	}
	section("Capability beliefs (package compat)", "A belief about the server changed (name label `compat` or `compat/<group/version>`).",
		"`reason` of `steadywatch_fallbacks_total`", cr)
	checkDoc(t, "reasons.md", rb.String())
}

const reasonsHeader = `# Reason codes: the complete set of metric label values

Generated from the code by ` + "`go test ./internal/engine -update`" + `; a unit test fails when this page and
the constants differ. Every log line of a fallback carries the same code as its ` + "`reason`" + ` key, so
"why did my informer relist?" is answered by the ` + "`cause`" + ` label of ` + "`steadywatch_relists_total`" + ` and the log
line at verbosity 2 with that reason. docs/troubleshooting.md explains the common ones.
`

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
