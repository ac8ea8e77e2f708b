package engine_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/steadywatch/steadywatch/compat"
	"github.com/steadywatch/steadywatch/fallback"
	"github.com/steadywatch/steadywatch/lister"
	"github.com/steadywatch/steadywatch/reflector"
)

// constDocs reads the Go sources of the package in dir (tests excluded) and
// returns, for every string constant, its value -> its doc comment (the
// comment above it, or the one at the end of its line) with the leading
// "Name:" or "Name" removed. It is how docs/troubleshooting.md stays the
// reason-code constants' own documentation: one text, in godoc and on the
// page.
func constDocs(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				if len(vs.Names) != 1 || len(vs.Values) != 1 {
					continue
				}
				lit, ok := vs.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				val, err := strconv.Unquote(lit.Value)
				if err != nil {
					continue
				}
				text := ""
				switch {
				case vs.Doc != nil:
					text = vs.Doc.Text()
				case vs.Comment != nil:
					text = vs.Comment.Text()
				}
				name := vs.Names[0].Name
				text = strings.TrimPrefix(strings.TrimSpace(text), name)
				text = strings.TrimSpace(strings.TrimPrefix(text, ":"))
				text = strings.Join(strings.Fields(text), " ")
				if text != "" && !strings.HasPrefix(text, "client-go") {
					text = strings.ToUpper(text[:1]) + text[1:]
				}
				docs[val] = text
			}
		}
	}
	return docs
}

// TestTroubleshootingIsGenerated keeps docs/troubleshooting.md in step with
// the reason-code constants: every code a metric or log line can carry has a
// non-empty explanation, taken from the constant's doc comment.
func TestTroubleshootingIsGenerated(t *testing.T) {
	fb, lw, rf, cp := constDocs(t, "../../fallback"), constDocs(t, "../../lister"), constDocs(t, "../../reflector"), constDocs(t, "../../compat")
	var b bytes.Buffer
	b.WriteString(troubleshootingHeader)
	table := func(title, intro string, codes []string, docs map[string]string) {
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| reason | what happened, and what to do |\n|---|---|\n", title, intro)
		for _, c := range codes {
			d := docs[c]
			if d == "" {
				t.Errorf("reason code %q (%s) has no doc comment to explain it", c, title)
			}
			fmt.Fprintf(&b, "| `%s` | %s |\n", c, strings.ReplaceAll(d, "|", `\|`))
		}
	}
	var list []string
	for _, c := range fallback.ListReasons() {
		list = append(list, string(c))
	}
	table("Lists (package lister; `reason` of `steadywatch_fallbacks_total`)",
		"Every list call ends with one of these in its Record and, on failure, in the *lister.Error; the decision table in [rules.md](rules.md) gives the rule and its public source.",
		list, fb)
	table("Drop-in ListerWatcher (package lister, under client-go's own reflector)",
		"What the ListerWatcher behind `reflector.NewSharedIndexInformer` and the informer-factory adoption counts: `cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total` and `steadywatch_fallbacks_total`.",
		[]string{lister.ReasonClientGoRelist, lister.ReasonClientGoRewatch, lister.ReasonWatchStalled, string(lister.ReasonStaleListReasked), string(lister.ReasonStaleEvent), string(lister.ReasonBadResourceVersion), string(lister.ReasonStreamingListAbandoned), string(lister.ReasonUnservedRVMostRecent)},
		lw)
	table("Reflector (package reflector)",
		"Why `reflector.New` moved: `reason` of `steadywatch_transitions_total`, `cause` of `steadywatch_relists_total`, `reason` of `steadywatch_watch_restarts_total`; the log line at verbosity 2 carries the same code and the detail.",
		reflector.Reasons(), rf)
	var caps []string
	capDocs := map[string]string{}
	for _, c := range compat.ReasonCodes() {
		caps = append(caps, string(c))
		name, support, ok := strings.Cut(strings.TrimPrefix(string(c), "compat:"), "=")
		if !ok {
			capDocs[string(c)] = cp[string(c)]
			continue
		}
		capDocs[string(c)] = fmt.Sprintf("The belief about this capability is now *%s* (from `/version` or from what the server did). %s", support, cp[name])
	}
	table("Capability beliefs (package compat; name `compat` or `compat/<group/version>`)",
		"A belief about the server changed. Beliefs are kept per host and per API group/version, and those learned from behaviour expire, so a long-lived informer tries again.",
		caps, capDocs)
	checkDoc(t, "troubleshooting.md", b.String())
}

const troubleshootingHeader = `# Troubleshooting

<!-- GENERATED by go test ./internal/engine -update from the reason-code constants' doc comments; do not edit by hand. -->

Every fallback steadywatch takes is a **reason code**: a metric label (see
[metrics/prometheus](../metrics/prometheus)) and the ` + "`reason`" + ` key of a log line at
verbosity 2 (` + "`-v=2`" + ` with klog, or a logr logger at V(2) in the context). The codes are
constants in the code, so this page lists every one, with the constant's own documentation.
[reasons.md](reasons.md) lists them by metric.

## My informer never syncs

1. **Look at the reason codes.** With the Prometheus recorder, ` + "`steadywatch_fallbacks_total`" + ` and
   ` + "`steadywatch_transitions_total`" + ` (reflector.New) say what the SDK did; at ` + "`-v=2`" + ` each
   fallback is a log line with the same ` + "`reason`" + `.
2. **Streaming lists.** Since client-go 1.35 informers ask for a streaming list (` + "`sendInitialEvents=true`" + `)
   and wait for a bookmark annotated ` + "`k8s.io/initial-events-end`" + `. Servers before 1.27 ignore the
   parameter, servers with the WatchList feature off refuse it (422), and proxies drop bookmarks or
   the annotation, or cut the stream before the bookmark. Stock client-go then waits forever; steadywatch
   falls back to a list (` + "`streaming-ignored`" + `, ` + "`streaming-rejected`" + `, ` + "`streaming-failed`" + `,
   ` + "`streaming-list-abandoned`" + `, ` + "`compat:streamingList=no`" + `).
   ` + "`kubectl steadywatch probe`" + ` checks your own proxy chain; [field-failures.md](field-failures.md) has
   every reported case, with stock client-go beside steadywatch.
3. **Retries that end.** ` + "`retries-exhausted`" + `, ` + "`too-large-rv-exhausted`" + `, ` + "`served-older-exhausted`" + `:
   the server stayed unavailable, behind, or lagging for the whole budget (` + "`fallback.Policy`" + `);
   the reflector retries after a backoff, ` + "`lister.List`" + ` returns the typed error.
4. **Not a resourceVersion problem.** ` + "`not-retriable`" + ` (RBAC: Forbidden; a wrong group/version:
   NotFound) and ` + "`invalid-not-retried`" + ` (a bad selector) are returned as the server said them.
5. **In unit tests.** A fake that never sends the initial-events-end bookmark makes stock informers wait
   (istio/istio#59268, kubernetes/kubernetes#129408). client-go's fake clientsets declare that they do not
   stream, and steadywatch's ListerWatcher forwards that declaration, so the informer lists at once; for
   real resourceVersion semantics in tests, use package ` + "`steadywatchtest`" + `.

## Why did my informer relist?

` + "`steadywatch_relists_total{cause}`" + ` answers it: for ` + "`reflector.New`" + ` the cause is the reflector's reason
(` + "`watch-gone`" + ` after a 410, ` + "`short-watch`" + `, ` + "`event-older-than-store`" + `, ` + "`watch-error`" + `, ` + "`too-large-rv`" + `);
for the drop-in informer it is ` + "`client-go-relist`" + ` (client-go's reflector decided; its own log line
says why) and the list's own reasons follow in ` + "`steadywatch_fallbacks_total`" + `. A relist that
follows a relist with no event in between waits a growing, jittered delay (the reflector's
Options.Backoff).

## What does this reason code mean?
`
