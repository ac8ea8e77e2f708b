package fieldfailures

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Client names, in the order of every table.
const (
	Stock     = "stock"     // client-go's SharedIndexInformer from an informer factory, defaults
	DropIn    = "drop-in"   // reflector.NewSharedIndexInformerWithOptions over lister.Options with a compat Detector's Server
	Reflector = "reflector" // steadywatch's reflector.New with a compat Detector's Server
)

// Clients is every client a row runs, in table order.
var Clients = []string{Stock, DropIn, Reflector}

// Results is one run of the suite.
type Results struct {
	// Started is when the run started (UTC).
	Started time.Time `json:"started"`
	// Server is the kube-apiserver version the rows ran against.
	Server string `json:"server"`
	// ClientGo is the client-go version of the stock client (and under steadywatch).
	ClientGo string `json:"clientGo"`
	// Bounds are the run's bounds.
	Bounds Bounds `json:"bounds"`
	// Rows are the measured rows, in catalogue order.
	Rows []RowResult `json:"rows"`
}

// Bounds are the limits a run applies. Steadywatch is asserted within them;
// stock client-go is measured against them.
type Bounds struct {
	Sync                 Duration `json:"sync"`                 // from start to HasSynced
	Converge             Duration `json:"converge"`             // from the last write to the store equalling an Exact list
	MinWindow            Duration `json:"minWindow"`            // each row observes the clients at least this long
	MaxRequestsPerMinute float64  `json:"maxRequestsPerMinute"` // asserted for steadywatch
}

// RowResult is one row's measurements.
type RowResult struct {
	ID      string         `json:"id"`
	Clients []ClientResult `json:"clients"`
	// Notes are observations of the row (e.g. whether the HA lag was reproduced).
	Notes []string `json:"notes,omitempty"`
}

// ClientResult is what one client did in one row.
type ClientResult struct {
	Client string `json:"client"`
	// Synced: HasSynced within Bounds.Sync; SyncTime from its start.
	Synced   bool     `json:"synced"`
	SyncTime Duration `json:"syncTime,omitempty"`
	// Converged: the store held exactly an Exact list at the last write's
	// resourceVersion (keys and object resourceVersions) within
	// Bounds.Converge, and still at the end of the row; ConvergeTime from
	// the last write.
	Converged    bool     `json:"converged"`
	ConvergeTime Duration `json:"convergeTime,omitempty"`
	// Requests on the row's ConfigMaps through the client's own proxy over
	// Window (from the client's start to the end of the row).
	Requests          int      `json:"requests"`
	Lists             int      `json:"lists"`
	StreamingLists    int      `json:"streamingLists"`
	Watches           int      `json:"watches"`
	Window            Duration `json:"window"`
	RequestsPerMinute float64  `json:"requestsPerMinute"`
	// Regressions are object or store resourceVersions that went back in time.
	Regressions []string `json:"regressions,omitempty"`
	// Fallbacks, Relists and WatchRestarts are steadywatch's metrics
	// (reason code -> count); empty for stock and, where the SDK emits none,
	// for the drop-in informer.
	Fallbacks     map[string]int `json:"fallbacks,omitempty"`
	Relists       map[string]int `json:"relists,omitempty"`
	WatchRestarts map[string]int `json:"watchRestarts,omitempty"`
	// Transitions are the reflector's phase changes, "from->to: reason code" -> count.
	Transitions map[string]int `json:"transitions,omitempty"`
}

// Duration is a time.Duration that marshals as seconds.
type Duration time.Duration

// MarshalJSON writes d as seconds with millisecond precision.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%.3f", time.Duration(d).Seconds())), nil
}

// UnmarshalJSON reads seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("fieldfailures: duration %s: %w", b, err)
	}
	*d = Duration(s * float64(time.Second))
	return nil
}

func (d Duration) String() string { return fmtSeconds(time.Duration(d)) }

func fmtSeconds(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.3f s", d.Seconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

// Save writes r as indented JSON to path.
func (r *Results) Save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("fieldfailures: encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("fieldfailures: write results: %w", err)
	}
	return nil
}

// Load reads a Results JSON written by Save.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fieldfailures: read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("fieldfailures: decode results %s: %w", path, err)
	}
	return &r, nil
}

func (rr RowResult) client(name string) (ClientResult, bool) {
	for _, c := range rr.Clients {
		if c.Client == name {
			return c, true
		}
	}
	return ClientResult{}, false
}

// Outcome is a client's outcome in words, with its times.
func (c ClientResult) Outcome(b Bounds) string {
	if !c.Synced {
		return fmt.Sprintf("**never synced** (%s bound)", b.Sync)
	}
	s := "synced in " + c.SyncTime.String()
	if c.Converged {
		s += ", converged in " + c.ConvergeTime.String()
	} else {
		s += fmt.Sprintf(", **store did not converge** (%s bound)", b.Converge)
	}
	if len(c.Regressions) > 0 {
		s += fmt.Sprintf(", **%d resourceVersion regression(s)**", len(c.Regressions))
	}
	return s
}

// Render writes the markdown page for r.
func Render(w io.Writer, r *Results) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Field failures: stock client-go beside steadywatch\n\n")
	fmt.Fprintf(&b, "<!-- Generated by `make field-failures` (e2e/cmd/fieldfailures) from docs/field-failures.json. Do not edit. -->\n\n")
	fmt.Fprintf(&b, "Each row is a list/watch failure that users reported against real servers, proxies or aggregated APIs,\n"+
		"reproduced against a real kube-apiserver %s started by the e2e harness, behind its fault proxy\n"+
		"([`e2e/harness/faults`](../e2e/harness/faults/)), by one spec of [`e2e/fieldfailures`](../e2e/fieldfailures/).\n"+
		"Three clients run side by side in each row, each through its own proxy so that its requests are counted apart:\n\n", r.Server)
	fmt.Fprintf(&b, "- **stock**: client-go %s `SharedIndexInformer` from an informer factory, defaults (streaming lists on);\n", r.ClientGo)
	fmt.Fprintf(&b, "- **drop-in**: steadywatch's `reflector.NewSharedIndexInformerWithOptions` over `lister.Options` with a `compat` Detector's Server;\n")
	fmt.Fprintf(&b, "- **reflector**: steadywatch's `reflector.New` with the same Server.\n\n")
	fmt.Fprintf(&b, "A row starts the clients on 20 ConfigMaps, waits up to %s for them to sync, then deletes one, updates one and\n"+
		"creates three, and waits up to %s for each store to hold exactly an `Exact` list at the last write's resourceVersion\n"+
		"(keys and object resourceVersions). Requests per minute count each client's requests on those ConfigMaps through its\n"+
		"proxy over the row (at least %s). steadywatch is asserted to sync, converge, never go back in time and stay under\n"+
		"%.0f requests/min; stock client-go's outcome is recorded, not asserted. Run of %s (UTC); times are single\n"+
		"measurements on a shared 2-core machine.\n\n",
		r.Bounds.Sync, r.Bounds.Converge, r.Bounds.MinWindow, r.Bounds.MaxRequestsPerMinute, r.Started.UTC().Format("2006-01-02 15:04"))

	b.WriteString(summary(r) + "\n\n")
	b.WriteString("| failure | public report | what the server / proxy does | stock client-go " + r.ClientGo + " | steadywatch drop-in informer | steadywatch reflector | requests/min (stock / drop-in / reflector) |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, rr := range r.Rows {
		row, ok := RowByID(rr.ID)
		if !ok {
			return fmt.Errorf("fieldfailures: results row %q is not in the catalogue", rr.ID)
		}
		var refs []string
		for _, rep := range row.Reports {
			refs = append(refs, fmt.Sprintf("[%s](%s)", rep.Ref, rep.URL))
		}
		cells := []string{row.Failure, strings.Join(refs, ", "), row.Emulation}
		var rates []string
		for _, name := range Clients {
			c, ok := rr.client(name)
			if !ok {
				cells = append(cells, "not run")
				rates = append(rates, "-")
				continue
			}
			cells = append(cells, c.Outcome(r.Bounds))
			rates = append(rates, fmt.Sprintf("%.0f", c.RequestsPerMinute))
		}
		cells = append(cells, strings.Join(rates, " / "))
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}

	b.WriteString("\n## The rows in detail\n")
	for _, rr := range r.Rows {
		row, _ := RowByID(rr.ID)
		fmt.Fprintf(&b, "\n### %s\n\n", row.Failure)
		for _, rep := range row.Reports {
			title := ""
			if rep.Title != "" {
				title = fmt.Sprintf(" \"%s\"", rep.Title)
			}
			fmt.Fprintf(&b, "- [%s](%s)%s: %s\n", rep.Ref, rep.URL, title, rep.Says)
		}
		fmt.Fprintf(&b, "\nHere: %s Spec `%s` in `e2e/fieldfailures`.\n\n", row.Emulation, row.ID)
		b.WriteString("| client | outcome | requests (lists / streaming lists / watches) | requests/min | steadywatch metrics: fallbacks, relists, watch restarts, transitions |\n|---|---|---|---|---|\n")
		for _, name := range Clients {
			c, ok := rr.client(name)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d (%d / %d / %d) in %s | %.0f | %s |\n", name, c.Outcome(r.Bounds), c.Requests,
				c.Lists, c.StreamingLists, c.Watches, c.Window, c.RequestsPerMinute, reasons(c))
		}
		for _, n := range rr.Notes {
			fmt.Fprintf(&b, "\n%s\n", n)
		}
		for _, name := range Clients {
			if c, ok := rr.client(name); ok && len(c.Regressions) > 0 {
				fmt.Fprintf(&b, "\n%s went back in time: %s\n", name, strings.Join(c.Regressions, "; "))
			}
		}
	}
	b.WriteString("\n## Reproduce\n\n```sh\nmake field-failures   # runs e2e/fieldfailures, writes docs/field-failures.json and this page\n" +
		"cd e2e && go test ./fieldfailures -ginkgo.v   # the same specs, results JSON in a temporary file\n```\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func reasons(c ClientResult) string {
	var parts []string
	for _, m := range []struct {
		what string
		m    map[string]int
	}{{"fallback", c.Fallbacks}, {"relist", c.Relists}, {"restart", c.WatchRestarts}, {"transition", c.Transitions}} {
		keys := make([]string, 0, len(m.m))
		for k := range m.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s `%s` ×%d", m.what, k, m.m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// summary counts, per client, the rows where it synced and converged
// without going back in time.
func summary(r *Results) string {
	var parts []string
	for _, name := range Clients {
		ok, never := 0, 0
		for _, rr := range r.Rows {
			c, found := rr.client(name)
			switch {
			case !found:
			case !c.Synced:
				never++
			case c.Converged && len(c.Regressions) == 0:
				ok++
			}
		}
		parts = append(parts, fmt.Sprintf("%s synced and converged in %d of %d rows (never synced in %d)", name, ok, len(r.Rows), never))
	}
	return "In this run: " + strings.Join(parts, "; ") + "."
}
