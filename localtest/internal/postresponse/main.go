// Command postresponse is a fixture function for the local stack's tests of
// the time after a function has responded (localtest/postresponse_test.go):
// it registers an internal extension subscribed to INVOKE, as a function
// that finishes work after its response does, and after each response it
// does what the payload asks:
//
//	{"after": "delay", "delayMs": 300}  the extension calls next 300 ms later
//	{"after": "hold"}                   the extension calls next once the process gets SIGUSR1
//	{"after": "exit"}                   the process exits at once
//	{}                                  the extension calls next at once
//
// It answers {"pid": …, "requestId": …}. It speaks the Runtime API itself
// rather than through aws-lambda-go, so that it acts exactly when the
// emulator has accepted its response, not at some point around it.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

type input struct {
	After   string `json:"after"`
	DelayMs int    `json:"delayMs"`
}

var api = "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API")

func main() {
	hold := make(chan os.Signal, 1)
	signal.Notify(hold, syscall.SIGUSR1)
	// Registration is only open until the runtime's first next.
	ext, err := register()
	if err != nil {
		fail("registering the extension", err)
	}
	responded := make(chan input, 1)
	go extension(ext, responded, hold)
	for {
		id, payload, err := next()
		if err != nil {
			fail("runtime next", err)
		}
		var in input
		_ = json.Unmarshal(payload, &in)
		out, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "requestId": id})
		if err := respond(id, out); err != nil {
			fail("posting the response", err)
		}
		if in.After == "exit" {
			os.Exit(0)
		}
		responded <- in
	}
}

// extension is the internal extension's loop: its first next ends init and
// returns the first INVOKE; each later one says it is done with the
// previous invoke and returns the next.
func extension(id string, responded <-chan input, hold <-chan os.Signal) {
	for {
		req, _ := http.NewRequest(http.MethodGet, api+"/2020-01-01/extension/event/next", nil)
		req.Header.Set("Lambda-Extension-Identifier", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fail("extension next", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		in := <-responded // this invoke's response has been accepted
		switch in.After {
		case "delay":
			time.Sleep(time.Duration(in.DelayMs) * time.Millisecond)
		case "hold":
			<-hold
		}
	}
}

func register() (string, error) {
	req, _ := http.NewRequest(http.MethodPost, api+"/2020-01-01/extension/register", bytes.NewReader([]byte(`{"events":["INVOKE"]}`)))
	req.Header.Set("Lambda-Extension-Name", "localtest-postresponse")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Lambda-Extension-Identifier"), nil
}

func next() (string, []byte, error) {
	resp, err := http.Get(api + "/2018-06-01/runtime/invocation/next")
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Lambda-Runtime-Aws-Request-Id"), b, err
}

func respond(id string, out []byte) error {
	resp, err := http.Post(api+"/2018-06-01/runtime/invocation/"+id+"/response", "application/json", bytes.NewReader(out))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return nil
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "postresponse: %s: %v\n", what, err)
	os.Exit(1)
}
