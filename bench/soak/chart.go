package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// panel is one chart of the SVG: lines over the soak's time axis.
type panel struct {
	title  string
	unit   string // of the y axis
	series []series
	dots   bool // mark each point (few points: one per bucket)
	// fitAfterWarmup scales the y axis to the points after the warm-up: a
	// cold start's seconds would flatten the minutes that matter. A point
	// above is drawn on the top edge with its value.
	fitAfterWarmup bool
}

// Chart geometry, in SVG user units.
const (
	chartWidth  = 1000
	plotLeft    = 70
	plotRight   = 760 // the legend is to the right
	panelHeight = 190
	panelGap    = 62
	chartTop    = 104
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

// svgChart draws the panels one above the other over [0, xMax] seconds,
// the warm-up [0, warmup] shaded in each, under a title and subtitle lines.
func svgChart(title string, subtitle []string, panels []panel, xMax, warmup float64) string {
	height := chartHeight(len(panels))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold">%s</text>`+"\n", plotLeft, html.EscapeString(title))
	for i, line := range subtitle {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">%s</text>`+"\n", plotLeft, 50+18*i, html.EscapeString(line))
	}
	minutes := xMax >= 180
	for i, p := range panels {
		top := float64(chartTop + i*(panelHeight+panelGap) + 16)
		drawPanel(&b, p, top, xMax, warmup, minutes)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// chartHeight is the height of a chart of n panels.
func chartHeight(n int) int { return chartTop + n*(panelHeight+panelGap) + 10 }

func drawPanel(b *strings.Builder, p panel, top, xMax, warmup float64, minutes bool) {
	bottom := top + panelHeight
	yMax, yAfter := 0.0, 0.0
	for _, s := range p.series {
		for _, pt := range s.Points {
			yMax = math.Max(yMax, pt.Y)
			if pt.X >= warmup {
				yAfter = math.Max(yAfter, pt.Y)
			}
		}
	}
	if p.fitAfterWarmup && yAfter > 0 {
		yMax = yAfter
	}
	step, yTop := niceScale(yMax)
	x := func(v float64) float64 { return plotLeft + (plotRight-plotLeft)*v/math.Max(xMax, 1e-9) }
	y := func(v float64) float64 { return bottom - panelHeight*math.Min(v, yTop)/yTop }

	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n", plotLeft, top-8, html.EscapeString(p.title))
	if warmup > 0 {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#eeeeee"/>`+"\n", x(0), top, x(warmup)-x(0), panelHeight)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#888" font-size="11">warm-up</text>`+"\n", x(0)+4, top+13)
	}
	for v := 0.0; v <= yTop+step/2; v += step {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/>`+"\n", plotLeft, y(v), plotRight, y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n", plotLeft-6, y(v)+4, tickLabel(v, step))
	}
	fmt.Fprintf(b, `<text transform="translate(%d,%.1f) rotate(-90)" text-anchor="middle" fill="#444">%s</text>`+"\n", 18, top+panelHeight/2, html.EscapeString(p.unit))
	xStep, xDiv, xUnit := niceTimeAxis(xMax, minutes)
	for v := 0.0; v <= xMax+1e-9; v += xStep {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", x(v), bottom, x(v), bottom+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444">%s</text>`+"\n", x(v), bottom+17, tickLabel(v/xDiv, xStep/xDiv))
	}
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n", plotRight, bottom+32, xUnit)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444"/>`+"\n", plotLeft, bottom, plotRight, bottom)
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444"/>`+"\n", plotLeft, top, plotLeft, bottom)

	for i, s := range p.series {
		color := palette[i%len(palette)]
		if len(s.Points) == 0 {
			continue
		}
		var pts strings.Builder
		for _, pt := range s.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(pt.X), y(pt.Y))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		if p.dots {
			for _, pt := range s.Points {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", x(pt.X), y(pt.Y), color)
			}
		}
		for _, pt := range s.Points {
			if pt.Y > yTop { // off the scale: its value on the edge
				fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">↑ %s</text>`+"\n", x(pt.X)+5, top+10+11*float64(i), color, tickLabel(pt.Y, 1))
			}
		}
		ly := top + 10 + float64(i)*17
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", plotRight+14, ly, plotRight+34, ly, color)
		fmt.Fprintf(b, `<text x="%d" y="%.1f">%s</text>`+"\n", plotRight+40, ly+4, html.EscapeString(s.Name))
	}
}

// niceScale is a tick step of 1, 2 or 5 times a power of ten giving about
// five ticks up to at least max, and the top tick.
func niceScale(max float64) (step, top float64) {
	if max <= 0 {
		return 1, 1
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return step, math.Ceil(max/step) * step
}

// niceTimeAxis is the x tick step (seconds), the divisor of its labels and
// their unit: minutes for a long soak, seconds for a short one.
func niceTimeAxis(xMax float64, minutes bool) (step, div float64, unit string) {
	if minutes {
		s, _ := niceScale(xMax / 60)
		return math.Max(s, 1) * 60, 60, "minutes since the load started"
	}
	s, _ := niceScale(xMax)
	return math.Max(s, 1), 1, "seconds since the load started"
}

// tickLabel prints v with as many decimals as step needs.
func tickLabel(v, step float64) string {
	switch {
	case step >= 1:
		return fmt.Sprintf("%.0f", v)
	case step >= 0.1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
