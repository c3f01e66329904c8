package localtest

import (
	"encoding/json"
	"testing"
)

func TestFunctionError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		wantError bool
		wantType  string
	}{
		{"answer", 200, `{"version":"1","result":{}}`, false, ""},
		{"runtime error", 200, `{"errorMessage":"boom","errorType":"errorString"}`, true, "errorString"},
		{"crash", 502, `{"errorType":"Runtime.ExitError","errorMessage":"RequestId: x Error: Runtime exited with error: exit status 3"}`, true, "Runtime.ExitError"},
		{"timeout", 200, `Task timed out after 3.00 seconds`, true, "Sandbox.Timedout"},
		{"other 5xx", 500, ``, true, "Runtime.Unknown"},
		{"an object that only looks like an error", 200, `{"errorType":"x","items":[]}`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, payload, isErr := functionError(tc.status, []byte(tc.body), "req-1", 3)
			if isErr != tc.wantError {
				t.Fatalf("error = %v, want %v", isErr, tc.wantError)
			}
			if !isErr {
				return
			}
			var body struct{ ErrorType, ErrorMessage string }
			if err := json.Unmarshal(payload, &body); err != nil {
				t.Fatalf("payload %s: %v", payload, err)
			}
			if kind != "Unhandled" || body.ErrorType != tc.wantType {
				t.Errorf("%s %s, want Unhandled %s", kind, payload, tc.wantType)
			}
		})
	}
}

func TestFunctionNameFromPath(t *testing.T) {
	for path, want := range map[string]string{
		"/2015-03-31/functions/BroadcastGetFunction/invocations":                                      "BroadcastGetFunction",
		"/2015-03-31/functions/arn:aws:lambda:us-east-1:000000000000:function:Fn:$LATEST/invocations": "Fn",
		"/2015-03-31/functions/000000000000:function:Fn/invocations":                                  "Fn",
		"/2015-03-31/functions/Fn:live/invocations":                                                   "Fn",
		"/2015-03-31/functions//invocations":                                                          "",
		"/2015-03-31/functions/Fn/configuration":                                                      "",
	} {
		got, ok := functionNameFromPath(path)
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", path, got, ok, want)
		}
	}
}
