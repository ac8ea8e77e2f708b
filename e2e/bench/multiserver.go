package main

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"
	"strings"
)

// Rendering of the multi-server measurements: the initial sync overview across servers,
// the scaling charts and table, and the apiserver cost.

func onServer(spec string) string {
	if spec == "" {
		return ""
	}
	return fmt.Sprintf(" (server `%s`)", spec)
}

func sanitize(s string) string {
	return strings.NewReplacer("/", "-", ".", "_").Replace(s)
}

// syncChartKey names an initial-sync report's chart file (without .png). Results from
// before -servers keep their old names.
func syncChartKey(p *syncReport) string {
	if p.Server == "" && p.Kind == "" {
		return fmt.Sprintf("sync-%d", p.Objects)
	}
	kind := p.Kind
	if kind == "" {
		kind = "configmaps"
	}
	return fmt.Sprintf("sync-%s-%s-%d", sanitize(p.Server), kind, p.Objects)
}

func pairedCost(p *costReport, ours, base string, f func(costRun) float64) spread {
	var rs []float64
	o, b := p.Runs[ours], p.Runs[base]
	for i := 0; i < len(o) && i < len(b); i++ {
		if d := f(b[i]); d > 0 {
			rs = append(rs, f(o[i])/d)
		}
	}
	return spreadOf(rs)
}

// pairedCostHeap pairs runs as pairedCost does, for the apiserver's peak heap,
// but only runs that started from comparable apiserver heaps
// (sameBaseline): the collector's room for garbage grows with the live
// heap, so a pair whose baselines are far apart compares the collector's
// pacing, not the work. left is how many pairs that leaves out.
func pairedCostHeap(p *costReport, ours, base string) (s spread, left int) {
	var rs []float64
	o, b := p.Runs[ours], p.Runs[base]
	for i := 0; i < len(o) && i < len(b); i++ {
		if !sameBaseline(o[i], b[i]) {
			left++
			continue
		}
		if d := b[i].heapDelta(); d > 0 {
			rs = append(rs, o[i].heapDelta()/d)
		}
	}
	return spreadOf(rs), left
}

// heapVs renders pairedCostHeap for a table cell.
func heapVs(p *costReport, ours, base string) string { return heapCell(pairedCostHeap(p, ours, base)) }

// heapCell renders a pairedCostHeap result.
func heapCell(s spread, left int) string {
	switch {
	case left == 0:
		return s.String()
	case s.N == 0:
		return fmt.Sprintf("n/a (%d pairs left out: baselines more than %.0f%% apart)", left, (costBaselineSpread-1)*100)
	}
	return fmt.Sprintf("%s (%d of %d pairs left out: baselines more than %.0f%% apart)", s, left, left+s.N, (costBaselineSpread-1)*100)
}

func medCost(runs []costRun, f func(costRun) float64) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, f(r))
	}
	return median(xs)
}

func (p *costReport) stockStreams() bool {
	runs := p.Runs["stock"]
	if len(runs) == 0 {
		return false
	}
	q := runs[0].Result.Requests
	return q["watch-list"] > 0 && q["list"] == 0
}

// unpaginated: the contender listed with one request per informer (the
// watch cache ignores limit at resourceVersion 0; without it, etcd pages).
func (p *costReport) unpaginated(name string) bool {
	runs := p.Runs[name]
	if len(runs) == 0 || p.Objects <= 500 {
		return false
	}
	n := runs[0].Result.Requests["list"]
	return n > 0 && n <= p.Informers
}

// syncChart: one initial-sync report, ratios against its chart base.
func syncChart(p *syncReport) chart {
	base := p.chartBase()
	title := fmt.Sprintf("Initial sync, %s: ratio vs %s (median)", p.label(), base)
	if p.Server != "" {
		title = fmt.Sprintf("Initial sync %s, %s: ratio vs %s (median)", p.Server, p.label(), base)
	}
	c := chart{Title: title, Series: []string{"sync time", "peak heap", "wire bytes"}, Marks: []float64{0.5, 0.6, 1}}
	for _, ct := range p.Contenders {
		if len(p.Runs[ct.Name]) == 0 {
			continue
		}
		c.Rows = append(c.Rows, ct.Name)
		c.Values = append(c.Values, []float64{
			pairedSync(p, ct.Name, base, syncMs).Median,
			pairedSync(p, ct.Name, base, peakHeap).Median,
			pairedSync(p, ct.Name, base, wireIn).Median,
		})
	}
	for _, name := range sortedKeys(p.Failures) {
		c.Rows = append(c.Rows, name)
		c.Values = append(c.Values, []float64{-1, -1, -1})
	}
	return c
}

// syncOverviewChart: every server and size, ours vs stock-list (the stock
// client that lists), one row each.
func (r *report) syncOverviewChart() (chart, bool) {
	c := chart{Title: "Initial sync on every server: ours vs stock-list (classic list), median ratio",
		Series: []string{"sw-informer time", "sw-reflector time", "sw-informer heap", "sw-reflector heap"}, Marks: []float64{0.6, 1}}
	for _, p := range r.Sync {
		if p.ScalingOnly {
			continue
		}
		base := p.stockListName()
		if len(p.Runs[base]) == 0 {
			continue
		}
		ours := p.ourNames()
		row := []float64{}
		for _, f := range []func(*syncResult) float64{syncMs, peakHeap} {
			for _, o := range ours {
				v := -1.0
				if len(p.Runs[o]) > 0 {
					v = pairedSync(p, o, base, f).Median
				}
				row = append(row, v)
			}
		}
		c.Rows = append(c.Rows, strings.TrimSpace(p.Server+" "+p.label()))
		c.Values = append(c.Values, row) // informer time, reflector time, informer heap, reflector heap
	}
	return c, len(c.Rows) > 0
}

func (r *report) syncOverview(w func(string, ...any), charts map[string]string) {
	if f, ok := charts["sync-overview"]; ok {
		w("### Initial sync at a glance: every server, ours vs the stock client that lists\n\n![Initial sync overview](bench/%s)\n\n", f)
		w("One row per server and size; bars are median ratios ours / `stock-list` (`stock-cr-list` for custom resources): client-go v0.37.2 with `WatchListClient=false`, i.e. what every stock client does on a server that does not stream lists. Dashed lines: the targets (0.6x heap, 1x time). Per-server tables with every contender follow below.\n\n")
	}
}

// scalingData: the configmaps reports of the first server, by size.
func (r *report) scalingReports() []*syncReport {
	first := ""
	if len(r.Servers) > 0 {
		first = r.Servers[0].Spec
	}
	var out []*syncReport
	for _, p := range r.Sync {
		if p.Server != first || p.isCR() {
			continue
		}
		if len(r.Scaling) > 0 && !slices.Contains(r.Scaling, p.Objects) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *syncReport) int { return a.Objects - b.Objects })
	return out
}

func (r *report) scalingCharts() (timeC, heapC lineChart, ok bool) {
	ps := r.scalingReports()
	if len(ps) < 2 {
		return lineChart{}, lineChart{}, false
	}
	server := r.Env.Server
	if len(r.Servers) > 0 {
		server = r.Servers[0].Spec
	}
	timeC = lineChart{Title: "Initial sync time vs objects (" + server + ", median)", XLabel: "objects (ConfigMaps of about 2.4 KB)", YLabel: "ms"}
	heapC = lineChart{Title: "Client peak heap vs objects (" + server + ", median)", XLabel: "objects (ConfigMaps of about 2.4 KB)", YLabel: "MiB"}
	for _, name := range scalingContenders {
		var xs, ts, hs []float64
		for _, p := range ps {
			runs := p.Runs[name]
			if len(runs) == 0 {
				continue
			}
			xs = append(xs, float64(p.Objects))
			ts = append(ts, medSync(runs, syncMs))
			hs = append(hs, mib(uint64(medSync(runs, peakHeap))))
		}
		if len(xs) == 0 {
			continue
		}
		timeC.Series = append(timeC.Series, name)
		timeC.X, timeC.Y = append(timeC.X, xs), append(timeC.Y, ts)
		heapC.Series = append(heapC.Series, name)
		heapC.X, heapC.Y = append(heapC.X, xs), append(heapC.Y, hs)
	}
	return timeC, heapC, len(timeC.Series) > 0
}

func (r *report) scalingSection(w func(string, ...any), charts map[string]string) {
	ps := r.scalingReports()
	if len(ps) == 0 || len(r.Scaling) == 0 {
		return
	}
	server := r.Env.Server
	if len(r.Servers) > 0 {
		server = fmt.Sprintf("`%s` (kube-apiserver %s)", r.Servers[0].Spec, r.Servers[0].Version)
	}
	w("## Scaling: sync time and client peak heap from %s to %s ConfigMaps\n\n", fmtCount(ps[0].Objects), fmtCount(ps[len(ps)-1].Objects))
	if f, ok := charts["scaling-time"]; ok {
		w("![sync time vs objects](bench/%s)\n\n", f)
	}
	if f, ok := charts["scaling-heap"]; ok {
		w("![peak heap vs objects](bench/%s)\n\n", f)
	}
	w("On server %s, in the same run as the initial sync (sizes that are also initial-sync sizes reuse its runs). Linear axes: a contender that scales linearly is a straight line through the origin; a knee shows as a bend. The per-object columns say the same in numbers (they stay flat when the cost is linear).\n\n", server)
	w("| objects | contender | sync ms (median) | µs per object | time vs stock | peak heap MiB | KiB per object | heap vs stock |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range ps {
		for _, name := range scalingContenders {
			runs := p.Runs[name]
			if len(runs) == 0 {
				if _, failed := p.Failures[name]; failed {
					w("| %s | `%s` | **did not sync** | | | | | |\n", fmtCount(p.Objects), name)
				}
				continue
			}
			sm, hp := medSync(runs, syncMs), medSync(runs, peakHeap)
			w("| %s | `%s` | %.0f | %.1f | %s | %.1f | %.2f | %s |\n", fmtCount(p.Objects), name, sm, sm*1000/float64(p.Objects),
				pairedSync(p, name, "stock", syncMs), mib(uint64(hp)), hp/1024/float64(p.Objects), pairedSync(p, name, "stock", peakHeap))
		}
	}
	w("\n")
}

func (r *report) costChart() (chart, bool) {
	c := chart{Title: "Apiserver cost of an informer herd: ratio vs stock-list (median)",
		Series: []string{"apiserver peak heap", "apiserver peak RSS", "apiserver CPU"}, Marks: []float64{0.5, 1}}
	for _, p := range r.Cost {
		if len(p.Runs["stock-list"]) == 0 {
			continue
		}
		for _, name := range p.Contenders {
			if len(p.Runs[name]) == 0 {
				continue
			}
			c.Rows = append(c.Rows, p.Server+": "+name)
			heap, _ := pairedCostHeap(p, name, "stock-list")
			c.Values = append(c.Values, []float64{
				heap.Median,
				pairedCost(p, name, "stock-list", costRun.rssDelta).Median,
				pairedCost(p, name, "stock-list", p.netCPU).Median,
			})
		}
	}
	return c, len(c.Rows) > 0
}

func (r *report) costSection(w func(string, ...any), charts map[string]string) {
	p0 := r.Cost[0]
	w("## Apiserver cost when %d informers start at once on %d ConfigMaps of %d KiB (~%.0f MiB)\n\n", p0.Informers, p0.Objects, p0.SizeKB, float64(p0.Objects*p0.SizeKB)/1024)
	if f, ok := charts["apiserver-cost"]; ok {
		w("![Apiserver cost](bench/%s)\n\n", f)
	}
	w("%d repetitions per contender, interleaved. ", p0.Count)
	w("The KEP-3157 scenario: one process per contender starts %d independent caches of the same namespace over one clientset at once; the run ends when all are synced (each holds all %d objects, checked). The apiserver's `/metrics` is sampled every %d ms during the run (each scrape's garbage is part of the heap it measures: 2-3 MiB each): *heap* is the peak of `go_memstats_heap_inuse_bytes` minus its value just before the child started, *RSS* the same for `process_resident_memory_bytes`, *CPU* the `process_cpu_seconds_total` delta, *allocated* the `go_memstats_alloc_bytes_total` delta (the memory the lists cost it in all; the peak heap shows it only up to its garbage collector's pacing). CPU and allocated are net of the bench's own sampling: right after each run the cost of one `/metrics` scrape is measured (21 scrapes back to back; about 3 MiB and 30 ms of CPU on v1.37.2), and the median of a server's measurements is taken out once per scrape of each run, which costs a longer run more (about a third of a core at ~10 scrapes a second). *etcd lists* is the apiserver's own count of list requests to etcd for configmaps (`etcd_requests_total`, or `etcd_request_duration_seconds_count` on servers before it), diffed around the run. Fair baseline: %s.\n\n",
		p0.Informers, p0.Objects, cmp.Or(p0.SampleMs, 100), p0.Baseline)
	for _, p := range r.Cost {
		w("### Apiserver cost on server `%s` (kube-apiserver %s)\n\n", p.Server, p.Version)
		if a, c := p.scrapeCost(); c > 0 {
			w("One `/metrics` scrape cost this apiserver %.1f MiB and %.0f ms of CPU (median of the runs' measurements), taken out of *CPU* and *allocated* once per scrape of each run.\n\n", mib(uint64(a)), c*1000)
		}
		if p.BallastMiB > 0 {
			w("The apiserver also holds %d MiB of other ConfigMaps (namespace cost-ballast, never listed here), as a real cluster's apiserver holds other data: its garbage collector lets about its live heap of garbage accumulate before collecting, so the peak heap of a herd grows with it.\n\n", p.BallastMiB)
		}
		if p.stockStreams() {
			w("`stock` streams lists here (`sendInitialEvents=true`).\n\n")
		} else {
			w("`stock` does not stream lists here: it behaves as `stock-list` does (or, where the server ignores `sendInitialEvents`, never syncs).\n\n")
		}
		w("| contender | all synced ms (median) | apiserver heap +MiB | heap vs stock | heap vs stock-list | apiserver RSS +MiB | RSS vs stock-list | apiserver CPU s | CPU vs stock-list | apiserver allocated MiB | allocated vs stock | etcd lists | client requests (first rep.) | LIST / WATCH at server | client peak heap MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, name := range p.Contenders {
			runs := p.Runs[name]
			if len(runs) == 0 {
				continue
			}
			alloc, allocRatio := "–", "–"
			if a := medCost(runs, p.netAlloc); a > 0 {
				alloc = fmt.Sprintf("%.0f", mib(uint64(a)))
				if medCost(p.Runs["stock"], p.netAlloc) > 0 {
					allocRatio = pairedCost(p, name, "stock", p.netAlloc).String()
				}
			}
			w("| `%s` | %.0f | %.1f | %s | %s | %.1f | %s | %.2f | %s | %s | %s | %g | %s | %g / %g | %.1f |\n", name,
				medCost(runs, func(x costRun) float64 { return x.Result.SyncMs }),
				mib(uint64(max(0, medCost(runs, costRun.heapDelta)))),
				heapVs(p, name, "stock"), heapVs(p, name, "stock-list"),
				mib(uint64(max(0, medCost(runs, costRun.rssDelta)))), pairedCost(p, name, "stock-list", costRun.rssDelta),
				medCost(runs, p.netCPU),
				pairedCost(p, name, "stock-list", p.netCPU),
				alloc, allocRatio,
				medCost(runs, func(x costRun) float64 { return x.Server.etcdLists() }),
				requestsString(runs[0].Result.Requests),
				medCost(runs, func(x costRun) float64 { return x.Server["apiserver_request_total{verb=LIST}"] }),
				medCost(runs, func(x costRun) float64 { return x.Server["apiserver_request_total{verb=WATCH}"] }),
				mib(uint64(medCost(runs, func(x costRun) float64 { return float64(x.Result.PeakHeap) }))))
		}
		for _, name := range sortedKeys(p.Failures) {
			w("| `%s` | **did not sync** | | | | | | | | | | | | | |\n", name)
		}
		if len(p.Failures) > 0 {
			w("\n")
			for _, name := range sortedKeys(p.Failures) {
				w("- `%s`: %s\n", name, p.Failures[name])
			}
		}
		w("\n")
	}
}

// lineChart: y against x, one polyline per series, linear axes from 0.
type lineChart struct {
	Title, XLabel, YLabel string
	Series                []string
	X, Y                  [][]float64
}

var linePalette = append(slices.Clone(palette), color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff})

func writeLineChart(path string, c lineChart) error {
	const (
		width, height            = 900, 460
		left, right, top, bottom = 80, 150, 40, 50
	)
	maxX, maxY := 0.0, 0.0
	for i := range c.X {
		for j := range c.X[i] {
			maxX, maxY = max(maxX, c.X[i][j]), max(maxY, c.Y[i][j])
		}
	}
	if maxX == 0 || maxY == 0 {
		maxX, maxY = max(maxX, 1), max(maxY, 1)
	}
	stepX, stepY := niceStep(maxX/5), niceStep(maxY*1.1/5)
	maxX = math.Ceil(maxX/stepX) * stepX
	maxY = math.Ceil(maxY*1.1/stepY) * stepY
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	ink := color.RGBA{0x22, 0x22, 0x22, 0xff}
	grey := color.RGBA{0x99, 0x99, 0x99, 0xff}
	light := color.RGBA{0xee, 0xee, 0xee, 0xff}
	drawText(img, 10, 10, c.Title, ink, 2)
	pw, ph := width-left-right, height-top-bottom
	px := func(x float64) int { return left + int(x/maxX*float64(pw)) }
	py := func(y float64) int { return top + ph - int(y/maxY*float64(ph)) }
	for v := 0.0; v <= maxY+stepY/2; v += stepY {
		fill(img, image.Rect(left, py(v), left+pw, py(v)+1), light)
		drawText(img, 6, py(v)-3, fmtAxis(v), grey, 1)
	}
	for v := 0.0; v <= maxX+stepX/2; v += stepX {
		fill(img, image.Rect(px(v), top, px(v)+1, top+ph), light)
		drawText(img, px(v)-12, top+ph+6, fmtAxis(v), grey, 1)
	}
	fill(img, image.Rect(left, top, left+1, top+ph+1), ink)
	fill(img, image.Rect(left, top+ph, left+pw, top+ph+1), ink)
	drawText(img, left+pw/2-3*len(c.XLabel), top+ph+22, c.XLabel, ink, 1)
	drawText(img, 6, top-14, c.YLabel, ink, 1)
	for s := range c.Series {
		col := linePalette[s%len(linePalette)]
		for j := range c.X[s] {
			x, y := px(c.X[s][j]), py(c.Y[s][j])
			fill(img, image.Rect(x-3, y-3, x+4, y+4), col)
			if j > 0 {
				drawLine(img, px(c.X[s][j-1]), py(c.Y[s][j-1]), x, y, col)
			}
		}
		ly := top + 10 + s*16
		fill(img, image.Rect(left+pw+14, ly, left+pw+24, ly+8), col)
		drawText(img, left+pw+28, ly, c.Series[s], ink, 1)
	}
	return writePNG(path, img)
}

func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtAxis(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%gk", v/1000)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// drawLine draws a 2-pixel-thick line (Bresenham).
func drawLine(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		fill(img, image.Rect(x0, y0, x0+2, y0+2), c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
