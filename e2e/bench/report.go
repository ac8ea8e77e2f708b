package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

type report struct {
	Size     string            `json:"size"`
	Count    int               `json:"count"`
	Command  string            `json:"command"`
	Env      environmentInfo   `json:"environment"`
	Sync     []*syncReport     `json:"initial_sync,omitempty"`
	Recovery *recoveryReport   `json:"recovery,omitempty"`
	Restart  *recoveryReport   `json:"restart,omitempty"`
	Overhead *overheadReport   `json:"overhead,omitempty"`
	Cost     []*costReport     `json:"apiserver_cost,omitempty"`
	Relist   []*relistReport   `json:"relist,omitempty"`
	Sharding []*shardingReport `json:"sharding,omitempty"`
	// Servers: each -servers entry in the order run, with the apiserver's
	// real version ("" in results from before -servers).
	Servers []serverRun `json:"servers,omitempty"`
	// Scaling: the object counts of the scaling charts (first server).
	Scaling []int `json:"scaling,omitempty"`
}

type serverRun struct {
	serverSpec
	Version   string  `json:"kube_apiserver"`
	DurationS float64 `json:"duration_s"`
}

type environmentInfo struct {
	Date      string  `json:"date"`
	GoVersion string  `json:"go"`
	OS        string  `json:"os"`
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpu_model"`
	ClientGo  string  `json:"client_go"`
	Server    string  `json:"kube_apiserver"`
	Commit    string  `json:"commit"`
	LoadStart string  `json:"load_start"`
	LoadEnd   string  `json:"load_end"`
	DurationS float64 `json:"duration_s"`
	// RateLimit is the contenders' client-side rate limit.
	RateLimit string `json:"client_rate_limit,omitempty"`
}

func environment(ctx context.Context, c config) environmentInfo {
	e := environmentInfo{Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), LoadStart: loadAvg(), RateLimit: "client-go default (rest.Config QPS 5, burst 10)"}
	if os.Getenv("BENCH_UNTHROTTLED") == "1" {
		e.RateLimit = "none (-unthrottled: rest.Config QPS -1)"
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				e.ClientGo = d.Version
			}
		}
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", c.root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
		if st, err := exec.CommandContext(ctx, "git", "-C", c.root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			e.Commit += " (+uncommitted changes in the tree)"
		}
	}
	return e
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// spread summarises paired ratios: median and range.
type spread struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	N      int       `json:"n"`
	All    []float64 `json:"all,omitempty"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return spread{Median: median(s), Min: s[0], Max: s[len(s)-1], N: len(s), All: xs}
}

func (s spread) String() string {
	if s.N == 0 {
		return "n/a"
	}
	if d := s.Median - 1; d != 0 && d > -0.005 && d < 0.005 {
		// Show that "1.00x" is not exactly 1 (verdicts use the exact value).
		return fmt.Sprintf("%.4fx (%.4f–%.4f)", s.Median, s.Min, s.Max)
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", s.Median, s.Min, s.Max)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// writeResults writes r as JSON to <out>/bench/<jsonName> and returns the
// folder <out>/bench.
func (r *report) writeResults(out, jsonName string) (dir string, err error) {
	dir = filepath.Join(out, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, jsonName), j, 0o644)
}

func (r *report) write(out string) error {
	if r.shardingOnly() {
		return r.writeShardingOnly(out)
	}
	if r.relistOnly() {
		return r.writeRelistOnly(out)
	}
	jsonName := "results-" + r.Size + ".json"
	dir, err := r.writeResults(out, jsonName)
	if err != nil {
		return err
	}
	charts := map[string]string{} // key -> file name in <out>/bench
	put := func(key string, draw func(path string) error) error {
		name := key + ".png"
		if err := draw(filepath.Join(dir, name)); err != nil {
			return err
		}
		charts[key] = name
		return nil
	}
	for _, p := range r.Sync {
		if p.ScalingOnly {
			continue
		}
		c := syncChart(p)
		if err := put(syncChartKey(p), func(path string) error { return writeChart(path, c) }); err != nil {
			return err
		}
	}
	if c, ok := r.syncOverviewChart(); ok {
		if err := put("sync-overview", func(path string) error { return writeChart(path, c) }); err != nil {
			return err
		}
	}
	if tc, hc, ok := r.scalingCharts(); ok && len(r.Scaling) > 0 {
		if err := put("scaling-time", func(path string) error { return writeLineChart(path, tc) }); err != nil {
			return err
		}
		if err := put("scaling-heap", func(path string) error { return writeLineChart(path, hc) }); err != nil {
			return err
		}
	}
	if c, ok := r.costChart(); ok {
		if err := put("apiserver-cost", func(path string) error { return writeChart(path, c) }); err != nil {
			return err
		}
	}
	if r.Recovery != nil {
		c := recoveryChart(r.Recovery)
		if err := put("recovery", func(path string) error { return writeChart(path, c) }); err != nil {
			return err
		}
	}
	notes, _ := os.ReadFile(filepath.Join(dir, "notes.md"))
	page := filepath.Join(out, "benchmarks.md")
	old, err := os.ReadFile(page)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	// The relist memory and sharding sections come from runs of their own
	// (-only relist, -only sharding), written into the page between their markers, with their own
	// results files. A run (or -render) without them keeps them.
	var carried []string
	keep := map[string]string{}
	if len(r.Relist) == 0 {
		if sec, ok := markedSection(string(old), relistBegin, relistEnd); ok {
			carried, keep["relist"] = append(carried, "relist memory"), sec
		}
	}
	if len(r.Sharding) == 0 {
		if sec, ok := markedSection(string(old), shardingBegin, shardingEnd); ok {
			carried, keep["sharding"] = append(carried, "sharding"), sec
		}
	}
	md := r.markdown(jsonName, string(notes), charts, carried)
	if sec, ok := keep["relist"]; ok {
		md = spliceRelist(md, sec)
	}
	if sec, ok := keep["sharding"]; ok {
		md = spliceSharding(md, sec)
	}
	if err := os.WriteFile(page, []byte(md), 0o644); err != nil {
		return err
	}
	logf("wrote %s, %s and %d charts", filepath.Join(out, "benchmarks.md"), filepath.Join(dir, jsonName), len(charts))
	return nil
}

// markedSection returns the part of page from begin to end (markers
// included) followed by a blank line, as the splice functions take it.
func markedSection(page, begin, end string) (string, bool) {
	i := strings.Index(page, begin)
	if i < 0 {
		return "", false
	}
	j := strings.Index(page[i:], end)
	if j < 0 {
		return "", false
	}
	return page[i:i+j+len(end)] + "\n\n", true
}

// rerender writes the markdown and charts again from a results JSON.
func rerender(jsonPath, out string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	return r.write(out)
}
