package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// overheadReport holds the raw go test output, benchstat's table and our own
// per-pair ratios (run i of ours / run i of client-go; go test -count runs
// the sub-benchmarks of one benchmark back to back, so pairs are adjacent).
type overheadReport struct {
	Command   string          `json:"command"`
	Raw       string          `json:"raw"`
	Benchstat string          `json:"benchstat"`
	Ratios    []overheadRatio `json:"ratios"`
}

type overheadRatio struct {
	Benchmark string  `json:"benchmark"`
	Impl      string  `json:"impl"`
	Metric    string  `json:"metric"`
	Base      float64 `json:"clientgo_median"`
	Ours      float64 `json:"ours_median"`
	Ratio     spread  `json:"ratio"`
}

func runOverhead(ctx context.Context, c config) (*overheadReport, error) {
	count := max(6, c.count)
	// Interleaved repetitions: `go test -count N` would run each
	// sub-benchmark N times in a row, so a drift of the machine's speed
	// during the run would favour whichever impl ran first. -p 1: the two
	// packages' benchmarks one after the other, not side by side on the
	// same cores.
	args := []string{"test", "-p", "1", "-run", "^$", "-bench", overheadBenchmarks, "-benchmem", "-count", "1", "-benchtime", c.benchtime, "./lister", "./reflector"}
	var out bytes.Buffer
	for i := range count {
		logf("overhead: repetition %d of %d", i+1, count)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = c.root
		var one bytes.Buffer
		cmd.Stdout = &one
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, one.String())
		}
		out.Write(one.Bytes())
	}
	rep := &overheadReport{Command: fmt.Sprintf("%d interleaved repetitions of `go %s`", count, strings.Join(args, " ")), Raw: out.String()}
	f := filepath.Join(os.TempDir(), fmt.Sprintf("steadywatch-overhead-%d.txt", os.Getpid()))
	if err := os.WriteFile(f, out.Bytes(), 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(f)
	bs := exec.CommandContext(ctx, "go", "run", "golang.org/x/perf/cmd/benchstat@latest", "-col", "/impl", f)
	bs.Dir = c.root
	var bsErr bytes.Buffer
	bs.Stderr = &bsErr
	bsOut, err := bs.Output()
	if err != nil {
		rep.Benchstat = fmt.Sprintf("benchstat failed: %v\n%s%s", err, bsOut, bsErr.String())
	} else {
		rep.Benchstat = strings.ReplaceAll(string(bsOut), f, "overhead.txt")
	}
	rep.Ratios = overheadRatios(out.String())
	return rep, nil
}

// overheadBenchmarks selects the lister's and the reflector's per-page and
// per-event benchmarks, each of which compares steadywatch with client-go.
const overheadBenchmarks = "^Benchmark(PaginatedList|PageStream|PageStreamProto|StreamingListEvent|PlainWatchEvent|ReflectorWatchEvent|InformerWatchEvent)$"

var benchLine = regexp.MustCompile(`^(Benchmark\w+)/impl=([\w+]+)-\d+\s+\d+\s+(.*)$`)

// overheadRatios pairs the i-th run of each non-clientgo impl with the i-th
// clientgo run of the same benchmark, per metric.
func overheadRatios(raw string) []overheadRatio {
	type key struct{ bench, impl, metric string }
	vals := map[key][]float64{}
	var order []key
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			k := key{m[1], m[2], f[i+1]}
			if _, seen := vals[k]; !seen {
				order = append(order, k)
			}
			vals[k] = append(vals[k], v)
		}
	}
	var out []overheadRatio
	for _, k := range order {
		if k.impl == "clientgo" {
			continue
		}
		base := vals[key{k.bench, "clientgo", k.metric}]
		ours := vals[k]
		var rs []float64
		for i := 0; i < len(base) && i < len(ours); i++ {
			if base[i] > 0 {
				rs = append(rs, ours[i]/base[i])
			} else if ours[i] == 0 {
				rs = append(rs, 1)
			}
		}
		if len(rs) == 0 {
			continue
		}
		out = append(out, overheadRatio{Benchmark: k.bench, Impl: k.impl, Metric: k.metric, Base: median(base), Ours: median(ours), Ratio: spreadOf(rs)})
	}
	return out
}
