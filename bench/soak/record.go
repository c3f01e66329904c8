package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// recorder collects what the clients saw: every request's latency, per
// bucket (by when it ended) and per operation, every call id and task id a
// result named, and every unexpected outcome.
type recorder struct {
	start  time.Time
	bucket time.Duration
	last   int // the load's last bucket: a request in flight at the end counts there

	mu       sync.Mutex
	buckets  []*bucketLoad
	ops      map[string]*opLoad
	calls    map[string]int // call id → results that named it
	tasks    map[string]int // task id → tasks created with it
	problems []string       // the first maxProblems
	nProblem int

	progressWant, progressGot atomic.Int64
}

// maxProblems bounds the unexpected outcomes kept word for word.
const maxProblems = 50

// bucketLoad is one bucket's requests.
type bucketLoad struct {
	latencies []float64 // ms
	problems  int
}

// opLoad is one operation's requests (a task's: its whole run).
type opLoad struct {
	latencies []float64 // ms
	problems  int
}

func newRecorder(start time.Time, bucket time.Duration) *recorder {
	return &recorder{start: start, bucket: bucket, ops: map[string]*opLoad{}, calls: map[string]int{}, tasks: map[string]int{}}
}

// request records one MCP request of op, started at start, that took d;
// callID is the call its result named ("" for none), problem what was
// unexpected about it ("" for nothing).
func (r *recorder) request(op string, start time.Time, d time.Duration, callID, problem string) {
	ms := float64(d) / float64(time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	i := max(int(start.Add(d).Sub(r.start)/r.bucket), 0)
	if r.last > 0 {
		i = min(i, r.last)
	}
	for len(r.buckets) <= i {
		r.buckets = append(r.buckets, &bucketLoad{})
	}
	b := r.buckets[i]
	b.latencies = append(b.latencies, ms)
	o := r.opLoad(op)
	o.latencies = append(o.latencies, ms)
	if callID != "" {
		r.calls[callID]++
	}
	if problem != "" {
		b.problems++
		o.problems++
		r.problem(op + ": " + problem)
	}
}

// task records one task run from its creation to its end.
func (r *recorder) task(id string, begin time.Time, problem string) {
	ms := float64(time.Since(begin)) / float64(time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.opLoad(opTask)
	o.latencies = append(o.latencies, ms)
	if id != "" {
		r.tasks[id]++
	}
	if problem != "" {
		o.problems++
		r.problem(opTask + ": " + problem)
	}
}

func (r *recorder) opLoad(op string) *opLoad {
	o := r.ops[op]
	if o == nil {
		o = &opLoad{}
		r.ops[op] = o
	}
	return o
}

func (r *recorder) problem(p string) {
	r.nProblem++
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, p)
	}
}

// expectProgress adds the progress notifications a digest's pages mean.
func (r *recorder) expectProgress(n int64) { r.progressWant.Add(n) }

// gotProgress counts one progress notification a client received.
func (r *recorder) gotProgress() { r.progressGot.Add(1) }

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// latencyStats summarises latencies (ms).
type latencyStats struct {
	N                       int
	P50, P90, P99, Max, Sum float64
}

func statsOf(lat []float64) latencyStats {
	s := slices.Clone(lat)
	slices.Sort(s)
	st := latencyStats{N: len(s), P50: percentile(s, 50), P90: percentile(s, 90), P99: percentile(s, 99)}
	if len(s) > 0 {
		st.Max = s[len(s)-1]
	}
	for _, v := range s {
		st.Sum += v
	}
	return st
}

// median of values (0 for none).
func median(values []float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	return percentile(s, 50)
}
