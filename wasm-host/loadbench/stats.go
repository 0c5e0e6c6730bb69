package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// quantile is a latency percentile. A request cut before its answer only
// tells us its latency is at least its age at the cut; when such a request
// ranks at or below the percentile, the value is only a lower bound.
type quantile struct {
	d          time.Duration
	lowerBound bool
}

func (q quantile) String() string {
	if q.lowerBound {
		return "≥" + fmtDur(q.d)
	}
	return fmtDur(q.d)
}

// summary is one side's figures for one run.
type summary struct {
	rps      float64 // 2xx answers per second
	p50, p99 quantile
	// late50 is the p50 of the requests started in the run's second half
	// (run.dur): with clients that all start together (the 1 s upstream
	// case), what is left once the start's herd has spread out.
	late50   quantile
	ok       int
	statuses map[string]int // non-2xx answers by status and error code
	errors   int            // transport errors
	firstErr string         // the first of them
	cut      int            // still unanswered at the cut
}

// summarise computes a run's figures. Percentiles cover the 2xx answers and
// the cut requests (as lower bounds); a fast error must not improve them.
func summarise(r run) summary {
	s := summary{statuses: map[string]int{}}
	type ranked struct {
		d    time.Duration
		cut  bool
		late bool // started in the run's second half
	}
	var lat []ranked
	for _, x := range r.samples {
		late := r.dur > 0 && x.at >= r.dur/2
		switch {
		case x.cut:
			s.cut++
			lat = append(lat, ranked{x.lat, true, late})
		case x.status == 0:
			if s.errors == 0 && x.err != nil {
				s.firstErr = x.err.Error()
			}
			s.errors++
		case x.status/100 == 2:
			s.ok++
			lat = append(lat, ranked{x.lat, false, late})
		default:
			s.statuses[strings.TrimSpace(strconv.Itoa(x.status)+" "+x.code)]++
		}
	}
	if r.elapsed > 0 {
		s.rps = float64(s.ok) / r.elapsed.Seconds()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i].d < lat[j].d })
	at := func(lat []ranked, p float64) quantile {
		if len(lat) == 0 {
			return quantile{}
		}
		i := int(math.Ceil(p*float64(len(lat)))) - 1
		i = max(0, min(i, len(lat)-1))
		q := quantile{d: lat[i].d}
		for _, x := range lat[:i+1] {
			q.lowerBound = q.lowerBound || x.cut
		}
		return q
	}
	s.p50, s.p99 = at(lat, 0.50), at(lat, 0.99)
	var late []ranked
	for _, x := range lat {
		if x.late {
			late = append(late, x)
		}
	}
	s.late50 = at(late, 0.50)
	return s
}

// failures describes what was not a 2xx, or "" when everything was.
func (s summary) failures() string {
	var parts []string
	codes := make([]string, 0, len(s.statuses))
	for c := range s.statuses {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		parts = append(parts, c+"×"+strconv.Itoa(s.statuses[c]))
	}
	if s.errors > 0 {
		parts = append(parts, "conn-err×"+strconv.Itoa(s.errors)+" ("+s.firstErr+")")
	}
	if s.cut > 0 {
		parts = append(parts, "unanswered×"+strconv.Itoa(s.cut))
	}
	return strings.Join(parts, " ")
}

// add merges another round's failure counts into s.
func (s *summary) addFailures(o summary) {
	if s.statuses == nil {
		s.statuses = map[string]int{}
	}
	for c, n := range o.statuses {
		s.statuses[c] += n
	}
	if s.errors == 0 {
		s.firstErr = o.firstErr
	}
	s.errors += o.errors
	s.cut += o.cut
}

// median of a non-empty slice (the mean of the two middle values when even).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianQ is the median of quantiles; it is a lower bound when any of them
// is (conservatively: the bound may not be the median one).
func medianQ(qs []quantile) quantile {
	var ds []float64
	lb := false
	for _, q := range qs {
		ds = append(ds, float64(q.d))
		lb = lb || q.lowerBound
	}
	return quantile{d: time.Duration(median(ds)), lowerBound: lb}
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + fmtDur(-d)
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + "µs"
	case d < 100*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// fmtAdded is a latency difference with its sign.
func fmtAdded(d time.Duration, lowerBound bool) string {
	s := fmtDur(d)
	if d >= 0 {
		s = "+" + s
	}
	if lowerBound {
		s = "≥" + s
	}
	return s
}

func fmtMiB(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<20), 'f', 0, 64) + "MiB"
}

func fmtRPS(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64) + "/s"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
}

// fmtRatio writes a ratio with the given decimals, and one more wherever
// fewer would print it as the target it falls short of or exceeds
// ("0.399×" rather than "0.40× [≥0.40× FAIL]").
func fmtRatio(r, target float64, decimals int) string {
	s := strconv.FormatFloat(r, 'f', decimals, 64)
	for r != target && s == strconv.FormatFloat(target, 'f', decimals, 64) && decimals < 6 {
		decimals++
		s = strconv.FormatFloat(r, 'f', decimals, 64)
	}
	return s + "×"
}

// verdict is " [target PASS]" or " [target FAIL]".
func verdict(target string, pass bool) string {
	if pass {
		return fmt.Sprintf(" [%s PASS]", target)
	}
	return fmt.Sprintf(" [%s FAIL]", target)
}

// bySecond is the p50 of the answered requests by the second of the run
// they started in, with their count: how a herd of clients that started
// together spreads over the run.
func bySecond(r run) string {
	var secs [][]time.Duration
	for _, x := range r.samples {
		if x.cut || x.status/100 != 2 {
			continue
		}
		i := int(x.at / time.Second)
		for len(secs) <= i {
			secs = append(secs, nil)
		}
		secs[i] = append(secs[i], x.lat)
	}
	var parts []string
	for _, d := range secs {
		if len(d) == 0 {
			parts = append(parts, "-")
			continue
		}
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%s×%d", fmtDur(d[len(d)/2]), len(d)))
	}
	return strings.Join(parts, " ")
}
