package xraystandin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// samplingServer answers the two sampling calls that the real daemon
// proxies to the X-Ray API on its TCP port. SDKs with the centralized
// sampling strategy (the Go SDK's default outside Lambda, as in the local
// gateway) poll them; without answers they fall back to sampling one
// request a second plus 5%, and most local calls would leave no segment.
type samplingServer struct {
	ln       net.Listener
	srv      *http.Server
	requests atomic.Int64
	done     chan struct{}
	// rulesServed is closed once the first rules answer is written, so a
	// test waits for an SDK's fetch on an event instead of a clock.
	rulesServed chan struct{}
	rulesOnce   sync.Once
}

// ServeSampling starts answering the X-Ray sampling API on TCP addr with a
// single default rule that samples every request. An empty addr uses the
// UDP address's host and port, as the real daemon does. Close stops it too.
//
// SDKs find it through DaemonAddress.
func (d *Daemon) ServeSampling(addr string) error {
	if addr == "" {
		addr = d.Addr()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("xraystandin: sampling: %w", err)
	}
	s := &samplingServer{ln: ln, done: make(chan struct{}), rulesServed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /GetSamplingRules", s.rules)
	mux.HandleFunc("POST /SamplingTargets", s.targets)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	d.mu.Lock()
	if d.closed || d.sampling != nil {
		d.mu.Unlock()
		ln.Close()
		return errors.New("xraystandin: sampling: daemon closed or already serving sampling")
	}
	d.sampling = s
	d.mu.Unlock()

	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns when Close shuts the server down
	}()
	return nil
}

// DaemonAddress is the value for AWS_XRAY_DAEMON_ADDRESS (and
// xray.Config.DaemonAddr): "tcp:HOST:PORT udp:HOST:PORT" once ServeSampling
// runs, else the UDP address alone.
func (d *Daemon) DaemonAddress() string {
	d.mu.Lock()
	s := d.sampling
	d.mu.Unlock()
	if s == nil {
		return d.Addr()
	}
	return "tcp:" + s.ln.Addr().String() + " udp:" + d.Addr()
}

// SamplingRequests counts the sampling API calls answered so far, so a test
// can wait until an SDK has fetched its rules.
func (d *Daemon) SamplingRequests() int {
	d.mu.Lock()
	s := d.sampling
	d.mu.Unlock()
	if s == nil {
		return 0
	}
	return int(s.requests.Load())
}

// ruleEpoch is a fixed creation/modification time for the one rule: SDKs
// refetch rules when a targets answer reports a later modification, which
// never happens here.
const ruleEpoch = 1_700_000_000

func (s *samplingServer) rules(w http.ResponseWriter, _ *http.Request) {
	s.requests.Add(1)
	defer s.rulesOnce.Do(func() { close(s.rulesServed) })
	// Field names and validity conditions are those of the X-Ray API's
	// GetSamplingRules: SDKs ignore rules whose Version is not 1, whose
	// ResourceARN is not "*" or that carry Attributes. The rule named
	// "Default" is every SDK's catch-all.
	writeJSON(w, map[string]any{
		"SamplingRuleRecords": []any{map[string]any{
			"CreatedAt":  ruleEpoch,
			"ModifiedAt": ruleEpoch,
			"SamplingRule": map[string]any{
				"RuleName":      "Default",
				"RuleARN":       "arn:aws:xray:us-east-1:000000000000:sampling-rule/Default",
				"ResourceARN":   "*",
				"Priority":      10000,
				"FixedRate":     1.0,
				"ReservoirSize": 1,
				"ServiceName":   "*",
				"ServiceType":   "*",
				"Host":          "*",
				"HTTPMethod":    "*",
				"URLPath":       "*",
				"Version":       1,
				"Attributes":    map[string]string{},
			},
		}},
	})
}

func (s *samplingServer) targets(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var in struct {
		SamplingStatisticsDocuments []struct{ RuleName string }
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in)
	docs := []any{}
	for _, st := range in.SamplingStatisticsDocuments {
		docs = append(docs, map[string]any{
			"RuleName":          st.RuleName,
			"FixedRate":         1.0,
			"ReservoirQuota":    1,
			"ReservoirQuotaTTL": time.Now().Add(time.Hour).Unix(),
			"Interval":          10,
		})
	}
	writeJSON(w, map[string]any{
		"LastRuleModification":    ruleEpoch,
		"SamplingTargetDocuments": docs,
		"UnprocessedStatistics":   []any{},
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *samplingServer) close() {
	_ = s.srv.Close()
	<-s.done
}
