package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"slices"
	"strings"
)

// A small horizontal bar chart drawn with the standard library only: one
// row per contender, one bar per series (ratio ours / stock), a line at 1x.

type chart struct {
	Title  string
	Series []string    // legend, one colour each
	Rows   []string    // contender names
	Values [][]float64 // [row][series] ratios; <0 = missing
	Marks  []float64   // vertical reference lines (e.g. targets)
}

var palette = []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}}

func recoveryChart(p *recoveryReport) chart {
	c := chart{Title: fmt.Sprintf("Recovery after a watch 410, %d objects: ratio vs stock (median)", p.Objects),
		Series: []string{"time to re-synced", "wire bytes", "server LIST+WATCH"}, Marks: []float64{1}}
	for _, name := range p.Contenders {
		if len(p.Runs[name]) == 0 {
			continue
		}
		c.Rows = append(c.Rows, name)
		c.Values = append(c.Values, []float64{
			pairedRec(p, name, "stock", func(x recoveryRun) float64 { return x.Result.RecoverMs }).Median,
			pairedRec(p, name, "stock", func(x recoveryRun) float64 { return float64(x.Result.WireIn) }).Median,
			pairedRec(p, name, "stock", func(x recoveryRun) float64 {
				return x.Server["apiserver_request_total{verb=LIST}"] + x.Server["apiserver_request_total{verb=WATCH}"]
			}).Median,
		})
	}
	return c
}

func writeChart(path string, c chart) error {
	const (
		scale  = 2
		left   = 190
		right  = 60
		top    = 40
		barH   = 9
		gap    = 8
		width  = 900
		legend = 22
	)
	maxV := 1.5
	for _, row := range c.Values {
		for _, v := range row {
			maxV = max(maxV, v*1.1)
		}
	}
	rowH := barH*len(c.Series) + gap
	height := top + rowH*len(c.Rows) + legend + 30
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	ink := color.RGBA{0x22, 0x22, 0x22, 0xff}
	grey := color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
	drawText(img, 10, 10, c.Title, ink, scale)
	plotW := width - left - right
	x := func(v float64) int { return left + int(v/maxV*float64(plotW)) }
	bottom := top + rowH*len(c.Rows)
	// grid at every 0.5x
	for v := 0.0; v <= maxV; v += 0.5 {
		xx := x(v)
		fill(img, image.Rect(xx, top-4, xx+1, bottom), color.RGBA{0xee, 0xee, 0xee, 0xff})
		drawText(img, xx-8, bottom+4, fmt.Sprintf("%.1f", v), grey, 1)
	}
	for _, m := range c.Marks {
		xx := x(m)
		col := grey
		if m == 1 {
			col = ink
		}
		for yy := top - 6; yy < bottom; yy += 4 {
			fill(img, image.Rect(xx, yy, xx+1, yy+2), col)
		}
	}
	for i, name := range c.Rows {
		y0 := top + i*rowH
		drawText(img, 8, y0+barH*len(c.Series)/2-3, name, ink, 1)
		if !slices.ContainsFunc(c.Values[i], func(v float64) bool { return v >= 0 }) {
			drawText(img, left+4, y0+barH*len(c.Series)/2-3, "did not sync (see the table)", palette[3], 1)
		}
		for s, v := range c.Values[i] {
			if v < 0 {
				continue
			}
			y := y0 + s*barH
			fill(img, image.Rect(left, y, max(left+1, x(v)), y+barH-2), palette[s%len(palette)])
			drawText(img, x(v)+4, y, fmt.Sprintf("%.2fx", v), ink, 1)
		}
	}
	ly := bottom + 18
	lx := left
	for s, name := range c.Series {
		fill(img, image.Rect(lx, ly, lx+10, ly+8), palette[s%len(palette)])
		drawText(img, lx+14, ly, name, ink, 1)
		lx += 20 + 6*len(name) + 20
	}
	drawText(img, lx, ly, "dashed: 1x and targets", grey, 1)
	return writePNG(path, img)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// drawText renders s with a 5x7 bitmap font (upper case; lower case is
// drawn as upper case), each pixel scale x scale.
func drawText(img *image.RGBA, x, y int, s string, c color.RGBA, scale int) {
	for _, r := range strings.ToUpper(s) {
		g, ok := font5x7[r]
		if !ok {
			g = font5x7['?']
		}
		for row, bits := range g {
			for col := 0; col < 5; col++ {
				if bits&(1<<(4-col)) != 0 {
					fill(img, image.Rect(x+col*scale, y+row*scale, x+(col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
		x += 6 * scale
	}
}

// font5x7: each glyph is 7 rows of 5 bits (MSB = leftmost column).
var font5x7 = map[rune][7]uint8{
	'A': {14, 17, 17, 31, 17, 17, 17}, 'B': {30, 17, 17, 30, 17, 17, 30}, 'C': {14, 17, 16, 16, 16, 17, 14},
	'D': {30, 17, 17, 17, 17, 17, 30}, 'E': {31, 16, 16, 30, 16, 16, 31}, 'F': {31, 16, 16, 30, 16, 16, 16},
	'G': {14, 17, 16, 23, 17, 17, 15}, 'H': {17, 17, 17, 31, 17, 17, 17}, 'I': {14, 4, 4, 4, 4, 4, 14},
	'J': {7, 2, 2, 2, 2, 18, 12}, 'K': {17, 18, 20, 24, 20, 18, 17}, 'L': {16, 16, 16, 16, 16, 16, 31},
	'M': {17, 27, 21, 21, 17, 17, 17}, 'N': {17, 17, 25, 21, 19, 17, 17}, 'O': {14, 17, 17, 17, 17, 17, 14},
	'P': {30, 17, 17, 30, 16, 16, 16}, 'Q': {14, 17, 17, 17, 21, 18, 13}, 'R': {30, 17, 17, 30, 20, 18, 17},
	'S': {15, 16, 16, 14, 1, 1, 30}, 'T': {31, 4, 4, 4, 4, 4, 4}, 'U': {17, 17, 17, 17, 17, 17, 14},
	'V': {17, 17, 17, 17, 17, 10, 4}, 'W': {17, 17, 17, 21, 21, 21, 10}, 'X': {17, 17, 10, 4, 10, 17, 17},
	'Y': {17, 17, 10, 4, 4, 4, 4}, 'Z': {31, 1, 2, 4, 8, 16, 31},
	'0': {14, 17, 19, 21, 25, 17, 14}, '1': {4, 12, 4, 4, 4, 4, 14}, '2': {14, 17, 1, 2, 4, 8, 31},
	'3': {31, 2, 4, 2, 1, 17, 14}, '4': {2, 6, 10, 18, 31, 2, 2}, '5': {31, 16, 30, 1, 1, 17, 14},
	'6': {6, 8, 16, 30, 17, 17, 14}, '7': {31, 1, 2, 4, 8, 8, 8}, '8': {14, 17, 17, 14, 17, 17, 14},
	'9': {14, 17, 17, 15, 1, 2, 12},
	' ': {}, '.': {0, 0, 0, 0, 0, 12, 12}, ',': {0, 0, 0, 0, 12, 4, 8}, '-': {0, 0, 0, 31, 0, 0, 0},
	'+': {0, 4, 4, 31, 4, 4, 0}, '/': {1, 1, 2, 4, 8, 16, 16}, ':': {0, 12, 12, 0, 12, 12, 0},
	'(': {2, 4, 8, 8, 8, 4, 2}, ')': {8, 4, 2, 2, 2, 4, 8}, '=': {0, 0, 31, 0, 31, 0, 0},
	'_': {0, 0, 0, 0, 0, 0, 31}, '%': {24, 25, 2, 4, 8, 19, 3}, '?': {14, 17, 1, 2, 4, 0, 4},
	'<': {2, 4, 8, 16, 8, 4, 2}, '>': {8, 4, 2, 1, 2, 4, 8},
}

// writePNG writes img to path.
func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
