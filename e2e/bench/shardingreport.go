package main

import (
	"fmt"
	"slices"
	"strings"
)

// shardingOnly: the run measured sharding (and perhaps relist memory) and
// nothing else. Its section then goes into the existing benchmarks.md
// (between the sharding markers, replacing only an earlier sharding section)
// and its results into results-sharding.json, so such a run leaves the rest
// of the page alone.
func (r *report) shardingOnly() bool {
	return len(r.Sharding) > 0 && len(r.Sync) == 0 && r.Recovery == nil && r.Restart == nil && r.Overhead == nil && len(r.Cost) == 0
}

const (
	shardingBegin = "<!-- sharding:begin: a run of e2e/bench -only sharding replaces this section alone -->"
	shardingEnd   = "<!-- sharding:end -->"
)

func (r *report) writeShardingOnly(out string) error {
	if len(r.Relist) > 0 {
		if err := r.writeRelistOnly(out); err != nil {
			return err
		}
	}
	return r.writeSectionOnly(out, "sharding", "results-sharding.json", func(page, jsonName string) string {
		return spliceSharding(page, r.shardingSection(jsonName))
	})
}

// spliceSharding puts section in place of page's sharding section, or after
// its relist memory section, or before its first trailing section, or at its
// end.
func spliceSharding(page, section string) string {
	if i := strings.Index(page, shardingBegin); i >= 0 {
		if j := strings.Index(page[i:], shardingEnd); j >= 0 {
			return page[:i] + section + strings.TrimLeft(page[i+j+len(shardingEnd):], "\n")
		}
	}
	if i := strings.Index(page, relistEnd); i >= 0 {
		rest := strings.TrimLeft(page[i+len(relistEnd):], "\n")
		return page[:i+len(relistEnd)] + "\n\n" + section + rest
	}
	return beforeTrailing(page, section)
}

// shardingGoal is the goal for a replica of n: at most 1/n of stock's
// figure plus ten percentage points of it.
func shardingGoal(n int) float64 { return 1/float64(n) + 0.10 }

// group returns the run of k replicas (0: stock) in repetition rep.
func (p *shardingReport) group(k, rep int) *shardingGroup {
	for i := range p.Groups {
		if g := &p.Groups[i]; g.Replicas == k && g.Rep == rep {
			return g
		}
	}
	return nil
}

// paired: f(replica i of k) / f(stock), paired by repetition.
func (p *shardingReport) paired(k, i int, f func(*shardingResult) float64) spread {
	var rs []float64
	for rep := 0; rep < p.Count; rep++ {
		g, s := p.group(k, rep), p.group(0, rep)
		if g == nil || s == nil || i >= len(g.Results) || len(s.Results) == 0 {
			continue
		}
		if b := f(&s.Results[0]); b > 0 {
			rs = append(rs, f(&g.Results[i])/b)
		}
	}
	return spreadOf(rs)
}

func (p *shardingReport) median(k, i int, f func(*shardingResult) float64) float64 {
	var xs []float64
	for _, g := range p.Groups {
		if g.Replicas == k && i < len(g.Results) {
			xs = append(xs, f(&g.Results[i]))
		}
	}
	return median(xs)
}

func (p *shardingReport) groupMedian(k int, f func(*shardingGroup) float64) float64 {
	var xs []float64
	for i := range p.Groups {
		if p.Groups[i].Replicas == k {
			xs = append(xs, f(&p.Groups[i]))
		}
	}
	return median(xs)
}

// pairedGroup: f(group of k) / f(stock's group), paired by repetition.
func (p *shardingReport) pairedGroup(k int, f func(*shardingGroup) float64) spread {
	var rs []float64
	for rep := 0; rep < p.Count; rep++ {
		g, s := p.group(k, rep), p.group(0, rep)
		if g != nil && s != nil && f(s) > 0 {
			rs = append(rs, f(g)/f(s))
		}
	}
	return spreadOf(rs)
}

// modes lists the modes replica i of k reported, in order of first sight.
func (p *shardingReport) modes(k, i int) string {
	var ms []string
	for _, g := range p.Groups {
		if g.Replicas != k || i >= len(g.Results) {
			continue
		}
		m := g.Results[i].Mode
		if m == "" {
			m = "(not learnt)"
		}
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, ", ")
}

var (
	shardingSync     = func(r *shardingResult) float64 { return r.SyncMs }
	shardingPeak     = func(r *shardingResult) float64 { return float64(r.PeakHeap) }
	shardingRetained = func(r *shardingResult) float64 { return float64(r.RetainedHeap) }
	shardingWire     = func(r *shardingResult) float64 { return float64(r.WireIn) }
	shardingObjects  = func(r *shardingResult) float64 { return float64(r.Objects) }
	shardingCPU      = func(g *shardingGroup) float64 { return g.APIServerCPU }
	shardingWall     = func(g *shardingGroup) float64 { return g.WallMs }
)

// shardingSection renders sharding (between its markers) for the page.
func (r *report) shardingSection(jsonName string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p0 := r.Sharding[0]
	w("%s\n## Sharding an operator's informers across replicas (KEP-5866)\n\n", shardingBegin)
	e := r.Env
	var versions []string
	for _, p := range r.Sharding {
		versions = append(versions, fmt.Sprintf("`%s` = %s", p.Server, p.Version))
	}
	w("Produced by\n\n```sh\n%s\n```\n\n", reproduceCommand(r.Command))
	w("on %s (kube-apiserver %s; steadywatch commit %s, %s, %d CPUs, load average start %s, end %s; the run took %.0f s); results with every request in [`bench/%s`](bench/%s). ",
		e.Date, strings.Join(versions, ", "), e.Commit, e.OS, e.CPUs, e.LoadStart, e.LoadEnd, e.DurationS, jsonName, jsonName)
	w("`make bench-shard` runs this section alone (100k ConfigMaps on v1.37.2 with the gate on and off, 1 repetition; `SHARDING_OBJECTS=20000` for a quick run; `-sharding-servers`, `-sharding-replicas` and `-sharding-count` choose more). It is not part of `make test`.\n\n")
	w("- **Setup.** %s ConfigMaps of about 2.4 KB (the initial sync's objects) in one namespace. For each replica count N, N child processes start their caches at once (each builds its client first; then the parent tells all of them to start). ", fmtCount(p0.Objects))
	if p0.Replica == "" {
		p0.Replica = "sw-dropin-listwatch" // results from before -sharding-replica
	}
	path := "the drop-in informer `reflector.NewSharedIndexInformerWithOptions` (compat Detector) over `shard.Wrap` of a typed `cache.ListWatch`"
	if p0.Replica == "sw-dropin-decoding" {
		path = "the drop-in informer `reflector.NewSharedIndexInformerWithDecoding` (compat Detector; `lister.Decoding` with the rest.Config and namespace) over `shard.Wrap` of a typed `cache.ListWatch`"
	}
	w("Each replica (`-sharding-replica %s`) is %s, holding a static range: the slices `shard.Assign` gives member `replica-<i>` among N (%d slices of the `metadata.uid` hash space, adjacent ones merged by `shard.SelectorOf`; no Leases: membership is not measured). ", p0.Replica, path, p0.Slices)
	w("*Stock* is client-go's `SharedInformerFactory` informer, unsharded, in one process. Each server entry is a fresh start of the apiserver; entries of one release reopen one etcd data directory, so the objects are created once per release.\n")
	w("- **Modes.** `/sharded`: `--feature-gates=ShardedListAndWatch=true`, the server filters (*server-side*); otherwise the server ignores `shardSelector` and each replica filters on the client (*client-side*). *mode* is what `shard.ListerWatcher.Mode` reported at sync; the run fails if it is not the server's.\n")
	w("- **Figures, per process**, from its start to `HasSynced`: *sync*; *peak heap*, the peak of `/memory/classes/heap/objects:bytes` sampled every millisecond (live objects and garbage not yet swept); *retained*, the heap after a forced GC once synced (the cache and the process's fixed cost); *bytes in*, what the process read from its TCP connections to the apiserver (a counting dialer under client-go's transport: TLS records, gzip as the server sent it; not the fault proxy). ")
	w("*apiserver CPU* is the growth of the apiserver's `process_cpu_seconds_total` for the whole group, from the start until the last process synced; *wall* is that time.\n")
	w("- **Split check.** Every replica checks that each object it holds is in its range; the parent checks that the replicas together hold every object and none twice (*objects held* is therefore that replica's exact share).\n")
	w("- **Reading it.** The apiserver, etcd and all of a group's processes share this machine's CPUs, as they would not on a cluster. Server-side, the apiserver sends every object once per group (to one replica or another), so its CPU for the group stays about stock's while each replica's share shrinks; where the apiserver is the bottleneck, a replica's sync lasts as long as the server takes to send all N shares at once. ")
	w("Client-side, every replica receives and decodes everything: the apiserver's CPU and the bytes grow with N, and so does the sync time where the replicas share CPUs. On a server without streaming lists (before 1.27, or with the WatchList gate off) the drop-in informer over a typed `cache.ListWatch` receives each list decoded whole by client-go before `shard.Wrap` filters it, so a replica's peak heap is that of the whole list; only what it keeps shrinks to its share.\n")
	w("- **Goals** (from the sharding issue): server-side, each replica at most 1/N + 10%% of stock's heap, bytes and time (ratio <= 1/N + 0.10); client-side, heap at most 1/N + 10%%. The heap goal is judged on the peak and on the retained heap. Ratios are replica / stock of the same repetition: median (min–max); absolute figures are medians.\n\n")
	for _, p := range r.Sharding {
		side := "client-side (the server ignores `shardSelector`)"
		if p.Gate {
			side = "server-side (`ShardedListAndWatch` on)"
		}
		w("### `%s` (kube-apiserver %s): %s, %s ConfigMaps\n\n", p.Server, p.Version, side, fmtCount(p.Objects))
		created := "reused from the previous entry's etcd data"
		if p.CreatedS > 0 {
			created = fmt.Sprintf("created in %.0f s", p.CreatedS)
		}
		w("%d repetition(s); objects %s.", p.Count, created)
		if p.Stock != "stock" {
			w(" The baseline is `%s`, client-go's informer with `WatchListClient` off: with its defaults stock client-go never syncs on this server, which ignores `sendInitialEvents` (see the initial sync).", p.Stock)
		}
		w("\n\n")
		w("| replicas | replica | mode | objects held | sync | / stock | peak heap | / stock | retained | / stock | bytes in | / stock | goals (<= 1/N + 0.10) | apiserver CPU, wall (group) |\n")
		w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, k := range append([]int{0}, p.Replicas...) {
			name := shardingGroupName(k)
			if why, failed := p.Failures[name]; failed && !slices.ContainsFunc(p.Groups, func(g shardingGroup) bool { return g.Replicas == k }) {
				w("| %s | | **failed**: %s | | | | | | | | | | | |\n", name, strings.ReplaceAll(shardingWhy(why, 300), "|", "/"))
				continue
			}
			cpu, wall := p.groupMedian(k, shardingCPU), p.groupMedian(k, shardingWall)
			if k == 0 {
				w("| `%s` (unsharded) | | | %.0f | %.0f ms | (base) | %.0f MiB | (base) | %.0f MiB | (base) | %.1f MiB | (base) | | %.1f s, %.0f ms |\n",
					p.Stock, p.median(0, 0, shardingObjects), p.median(0, 0, shardingSync), mib(uint64(p.median(0, 0, shardingPeak))), mib(uint64(p.median(0, 0, shardingRetained))),
					mib(uint64(p.median(0, 0, shardingWire))), cpu, wall)
				continue
			}
			goal := shardingGoal(k)
			for i := 0; i < k; i++ {
				ts, ps, rs, bs := p.paired(k, i, shardingSync), p.paired(k, i, shardingPeak), p.paired(k, i, shardingRetained), p.paired(k, i, shardingWire)
				judge := func(what string, s spread) string {
					return fmt.Sprintf("%s %.2f %s", what, s.Median, verdict(s.N > 0 && s.Median <= goal))
				}
				goals := []string{judge("peak", ps), judge("retained", rs)}
				if p.Gate {
					goals = append([]string{judge("time", ts)}, append(goals, judge("bytes", bs))...)
				}
				group := ""
				if i == 0 {
					group = fmt.Sprintf("%.1f s (%s), %.0f ms", cpu, p.pairedGroup(k, shardingCPU), wall)
				}
				w("| %d | %d | %s | %.0f | %.0f ms | %s | %.0f MiB | %s | %.0f MiB | %s | %.1f MiB | %s | %s | %s |\n",
					k, i, p.modes(k, i), p.median(k, i, shardingObjects), p.median(k, i, shardingSync), ts, mib(uint64(p.median(k, i, shardingPeak))), ps,
					mib(uint64(p.median(k, i, shardingRetained))), rs, mib(uint64(p.median(k, i, shardingWire))), bs, strings.Join(goals, "; "), group)
			}
		}
		w("\n")
		for _, name := range sortedKeys(p.Failures) {
			w("- `%s` failed: %s\n", name, shardingWhy(p.Failures[name], 1500))
		}
		if len(p.Failures) > 0 {
			w("\n")
		}
	}
	w("%s\n\n", shardingEnd)
	return b.String()
}

// shardingWhy shortens a failure for the page (the results keep it whole): the
// child's own error (its last "child: " line) rather than its log, at most
// n bytes, on one line.
func shardingWhy(why string, n int) string {
	if i := strings.LastIndex(why, "child: "); i >= 0 {
		head, _, _ := strings.Cut(why, ": child exited")
		why = head + ": " + why[i:]
	}
	why = strings.Join(strings.Fields(why), " ")
	if len(why) > n {
		why = why[:n] + "..."
	}
	return why
}
