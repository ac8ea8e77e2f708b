package matrix

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/steadywatch/steadywatch/e2e/chaos"
)

// ParseReport reads a report written by cmd/matrix: either its -json file
// or a page it rendered (docs/compatibility.md), whose raw-results block
// carries the same JSON. So a page can be regenerated with more versions
// without the files of the run that produced it.
func ParseReport(data []byte) (Report, error) {
	var r Report
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "{") {
		const open, end = "<summary>Raw results (JSON)</summary>\n\n```json\n", "\n```"
		i := strings.LastIndex(s, open)
		if i < 0 {
			return r, errors.New("neither a JSON report nor a page with a raw-results block")
		}
		s = s[i+len(open):]
		j := strings.Index(s, end)
		if j < 0 {
			return r, errors.New("raw-results block not closed")
		}
		s = s[:j]
	}
	err := json.Unmarshal([]byte(s), &r)
	return r, err
}

// ChaosOrigins says where the chaos results of reports come from: a report
// that carried them over names its sources, any other one is their source
// ("<generated> by `<command>`").
func ChaosOrigins(reports ...Report) []string {
	var out []string
	for _, r := range reports {
		if len(r.Chaos) == 0 {
			continue
		}
		from := r.ChaosFrom
		if len(from) == 0 {
			from = []string{r.Generated + " by `" + r.Command + "`"}
		}
		for _, f := range from {
			if !contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Merge folds earlier reports, oldest first, into one: their rows (a later
// report's row replaces an earlier one for the same server and
// configuration), each tagged with the run that measured it, the runs that
// still have rows, and every chaos result. A report without Runs is one run
// (its header); a report with Runs brings them along.
func Merge(reports ...Report) (rows []Row, runs []RunInfo, results []chaos.Result) {
	type tagged struct {
		row Row
		run RunInfo
	}
	var all []tagged
	for _, r := range reports {
		own := RunInfo{Generated: r.Generated, Command: r.Command, Go: r.Go, ClientGo: r.ClientGo}
		for _, row := range r.Rows {
			run := own
			if row.Run > 0 && row.Run <= len(r.Runs) {
				run = r.Runs[row.Run-1]
			}
			all = append(all, tagged{row, run})
		}
		results = append(results, r.Chaos...)
	}
	// Keep the last measurement of each server x configuration.
	last := map[string]int{}
	for i, t := range all {
		last[t.row.Server+"\x00"+t.row.Config.Name] = i
	}
	runKey := func(r RunInfo) string { return r.Generated + "\x00" + r.Command }
	byKey := map[string]*RunInfo{}
	var keys []string
	var kept []tagged
	for i, t := range all {
		if last[t.row.Server+"\x00"+t.row.Config.Name] != i {
			continue
		}
		kept = append(kept, t)
		k := runKey(t.run)
		if byKey[k] == nil {
			r := t.run
			r.Servers, r.Seconds = nil, nil
			byKey[k] = &r
			keys = append(keys, k)
		}
		r := byKey[k]
		if !contains(r.Servers, t.row.Server) {
			r.Servers = append(r.Servers, t.row.Server)
		}
		if sec, ok := t.run.Seconds[t.row.Server]; ok {
			if r.Seconds == nil {
				r.Seconds = map[string]float64{}
			}
			r.Seconds[t.row.Server] = sec
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i] < keys[j] }) // oldest first (RFC 3339 sorts)
	pos := map[string]int{}
	for i, k := range keys {
		pos[k] = i + 1
		r := *byKey[k]
		sortServers(r.Servers)
		runs = append(runs, r)
	}
	for _, t := range kept {
		t.row.Run = pos[runKey(t.run)]
		rows = append(rows, t.row)
	}
	SortRows(rows)
	return rows, runs, results
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// sortServers orders server names as SortRows orders their rows.
func sortServers(s []string) {
	sort.SliceStable(s, func(i, j int) bool {
		if IsPair(s[i]) != IsPair(s[j]) {
			return !IsPair(s[i])
		}
		return compareServers(s[i], s[j]) < 0
	})
}

// SortRows orders rows for the table: single versions before mixed pairs,
// each by release (semver), then configurations in Configs order.
func SortRows(rows []Row) {
	cfg := func(name string) int {
		for i, c := range Configs {
			if c.Name == name {
				return i
			}
		}
		return len(Configs)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if IsPair(a.Server) != IsPair(b.Server) {
			return !IsPair(a.Server)
		}
		if c := compareServers(a.Server, b.Server); c != 0 {
			return c < 0
		}
		return cfg(a.Config.Name) < cfg(b.Config.Name)
	})
}

// compareServers compares "vX.Y.Z" or "old+new" pairs release by release.
func compareServers(a, b string) int {
	as, bs := strings.Split(a, "+"), strings.Split(b, "+")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := semver.Compare(as[i], bs[i]); c != 0 {
			return c
		}
		if as[i] != bs[i] {
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}
