// Package held is a tool that holds each call until the test releases it,
// for the local stack's tests of cancellation: its handler tells the test's
// HTTP server (the notify URL in its arguments) when it starts and when its
// context ends, and waits for the test to release it. A test waits on those
// reports, never on time. It runs only locally, as an ExtraFunctions
// fixture (function/ is its Lambda main).
package held

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpfn/mcpfn/adapter"
)

// Name is the tool's name.
const Name = "held_fixture"

// Input names the call (label) and where to report (notify, the test's
// server).
type Input struct {
	Notify string `json:"notify"`
	Label  string `json:"label"`
}

// Output says the test released the call.
type Output struct {
	Label    string `json:"label"`
	Released bool   `json:"released"`
}

// Report is what the handler POSTs to <notify>/started and
// <notify>/stopped (as JSON).
type Report struct {
	Label     string `json:"label"`
	CallID    string `json:"callId"`
	JSONRPCID string `json:"jsonrpcId"`
	SessionID string `json:"sessionId,omitempty"`
	// Cause is why the context ended (stopped only).
	Cause string `json:"cause,omitempty"`
}

// Tool returns the tool definition, shared by the gateway's catalog and
// the function.
func Tool() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[Input, Output]{
		Name:        Name,
		Description: "Test fixture: holds a call until the test releases it, reporting when it starts and when its context ends. Local stack only.",
		ReadOnly:    true,
		Handler: func(ctx context.Context, call *adapter.Call, in Input) (Output, error) {
			r := Report{Label: in.Label, CallID: call.ID, SessionID: call.SessionID}
			if call.MCP != nil {
				r.JSONRPCID = string(call.MCP.JSONRPCID)
			}
			if err := post(context.WithoutCancel(ctx), in.Notify+"/started", r); err != nil {
				return Output{}, err
			}
			// The release is a long poll the test answers; the call's
			// context ending aborts it.
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.Notify+"/release?label="+url.QueryEscape(in.Label), nil)
			if err != nil {
				return Output{}, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return Output{Label: in.Label, Released: true}, nil
				}
				err = fmt.Errorf("release answered %s", resp.Status)
			}
			if ctx.Err() == nil {
				return Output{}, err
			}
			r.Cause = context.Cause(ctx).Error()
			_ = post(context.WithoutCancel(ctx), in.Notify+"/stopped", r)
			return Output{}, ctx.Err()
		},
	})
}

func post(ctx context.Context, to string, r Report) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
