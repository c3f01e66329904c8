package gateway

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpfn/mcpfn/wire"
)

// The HTTP status of a JSON-RPC error answering a request, by the table of
// the request's protocol revision (docs/decisions/0031). One rule for every
// method, whoever answers: the gateway's own refusals and the tasks methods
// use it when they write, and statusWriter holds the go-sdk's JSON answers
// to it.
//
// 2026-07-28 (the Streamable HTTP transport page, basic/index and the
// schema): HeaderMismatch -32020, MissingRequiredClientCapability -32021 and
// UnsupportedProtocolVersion -32022 on 400 Bad Request; Method not found
// -32601 on 404 Not Found; Invalid params -32602 on 400 only for a request
// missing a required _meta field (protocolVersion, clientCapabilities); any
// other error on 200 OK, like a result: the JSON-RPC body says what failed,
// and an HTTP error would make a client report a transport failure instead
// (an unknown task, an unknown tool, arguments that are not an object).
//
// 2025-03-26 … 2025-11-25: a request is answered with a JSON-RPC message,
// error or result, on 200 OK; the HTTP errors of those revisions are for
// what is not a request the server accepts (a bad or unsupported
// MCP-Protocol-Version header, a body that is not JSON-RPC), refused before
// any method runs, and stay as they are.

// errorStatus is what the table needs to know of one request.
type errorStatus struct {
	// modern: the request speaks 2026-07-28 or later, in its
	// MCP-Protocol-Version header or its _meta.
	modern bool
	// metaMissing: a modern request without a required _meta field.
	metaMissing bool
	// msg is a modern request's message, whose _meta decides metaMissing
	// on its first -32602: most requests never get one, and pay nothing.
	msg []byte
}

// The _meta keys of the request's protocol version and client
// capabilities, both required from 2026-07-28 on.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// errorStatusOf reads the request's era: its header, else its _meta (read
// only when the message names the key).
func errorStatusOf(h http.Header, msg []byte) errorStatus {
	s := errorStatus{modern: h.Get("Mcp-Protocol-Version") >= wire.ModernProtocolVersion}
	if !s.modern && bytes.Contains(msg, []byte(metaProtocolVersion)) {
		version, _ := readMeta(msg)
		s.modern = version >= wire.ModernProtocolVersion
	}
	if s.modern {
		s.msg = msg
	}
	return s
}

// readMeta is the protocol version in msg's _meta ("" if none) and whether
// its client capabilities are an object. A message that is not JSON has
// neither.
func readMeta(msg []byte) (version string, caps bool) {
	var m struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(msg, &m)
	_ = json.Unmarshal(m.Params.Meta[metaProtocolVersion], &version)
	c := bytes.TrimLeft(m.Params.Meta[metaClientCapabilities], " \t\r\n")
	return version, len(c) > 0 && c[0] == '{'
}

// of is the HTTP status of a JSON-RPC error with code.
func (s errorStatus) of(code int) int {
	if !s.modern {
		return http.StatusOK
	}
	switch code {
	case codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion:
		return http.StatusBadRequest
	case wire.RPCMethodNotFound:
		return http.StatusNotFound
	case wire.RPCInvalidParams:
		if s.metaMissing {
			return http.StatusBadRequest
		}
		if s.msg != nil {
			if version, caps := readMeta(s.msg); version == "" || !caps {
				return http.StatusBadRequest
			}
		}
	}
	return http.StatusOK
}

// codeUnsupportedVersion is SEP-2575's UnsupportedProtocolVersion.
const codeUnsupportedVersion = mcp.CodeUnsupportedProtocolVersion

// writeRPCErrorFor answers the request of s with a JSON-RPC error, on the
// status the table gives it.
func writeRPCErrorFor(w http.ResponseWriter, s errorStatus, e *wire.RPCError, id json.RawMessage) {
	b, _ := json.Marshal(wire.NewRPCResponse(id, nil, e))
	writeJSON(w, s.of(e.Code), b)
}

// statusWriter passes an answer through, except a JSON one, whose status
// waits for its body: if it is a JSON-RPC error, it goes out on the status
// the table gives its code. The go-sdk answers -32602 with 400 in the
// 2026-07-28 era whatever the cause. A stream (SSE) passes untouched, and
// so do plain-text refusals, but one: the go-sdk refuses a request for a
// method it does not know with a plain-text 400 unless the request is of
// 2026-07-28, where the transport page asks for -32601; in the earlier
// revisions a request gets a JSON-RPC answer, so it gets -32601 too.
type statusWriter struct {
	w    http.ResponseWriter
	rule errorStatus
	id   json.RawMessage // the request's id; nil for a notification
	// status is the status of an answer held back: its body decides.
	status int
	// held: the answer is in body until finish (a JSON answer that came in
	// pieces, or a plain-text refusal).
	held  bool
	wrote bool // the header went out
	body  bytes.Buffer
}

func newStatusWriter(w http.ResponseWriter, rule errorStatus, id json.RawMessage) *statusWriter {
	return &statusWriter{w: w, rule: rule, id: id}
}

// goSDKUnknownMethod starts the go-sdk's plain-text refusal of a method it
// does not serve (jsonrpc2.ErrNotHandled); TestErrorStatusByRevision fails
// if an upgrade changes it.
const goSDKUnknownMethod = "JSON RPC not handled: "

func (s *statusWriter) Header() http.Header { return s.w.Header() }

func (s *statusWriter) WriteHeader(status int) {
	if s.wrote || s.status != 0 {
		return
	}
	switch mt, _, _ := mime.ParseMediaType(s.w.Header().Get("Content-Type")); {
	case mt == "application/json":
		s.status = status
		return
	case mt == "text/plain" && status == http.StatusBadRequest && !s.rule.modern && len(s.id) > 0:
		s.status, s.held = status, true
		return
	}
	s.wrote = true
	s.w.WriteHeader(status)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if !s.wrote && s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	if s.wrote {
		return s.w.Write(p)
	}
	if !s.held && json.Valid(p) {
		// The whole JSON answer in one write, as the go-sdk writes it.
		s.wrote = true
		s.w.WriteHeader(s.statusOf(p))
		return s.w.Write(p)
	}
	s.held = true
	return s.body.Write(p)
}

// Flush flushes a stream; an answer held back waits for finish.
func (s *statusWriter) Flush() {
	if s.wrote {
		_ = http.NewResponseController(s.w).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.w }

// finish writes an answer held back: a JSON-RPC error on the table's
// status, the go-sdk's plain-text unknown method as the -32601 it is,
// anything else as it was.
func (s *statusWriter) finish() {
	if s.wrote || s.status == 0 {
		return
	}
	s.wrote = true
	body := s.body.Bytes()
	if msg, ok := bytes.CutPrefix(body, []byte(goSDKUnknownMethod)); ok && !s.rule.modern {
		s.w.Header().Del("X-Content-Type-Options")
		writeRPCErrorFor(s.w, s.rule, &wire.RPCError{Code: wire.RPCMethodNotFound,
			Message: "method not found: " + string(bytes.TrimSpace(msg))}, s.id)
		return
	}
	s.w.WriteHeader(s.statusOf(body))
	_, _ = s.w.Write(body)
}

// statusOf is the status of a held answer with body: the table's for a
// JSON-RPC error response, the one it was written with otherwise.
func (s *statusWriter) statusOf(body []byte) int {
	if !bytes.Contains(body, []byte(`"error"`)) {
		return s.status // a result: skip decoding it
	}
	var m struct {
		Error *struct {
			Code *int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil && m.Error != nil && m.Error.Code != nil {
		return s.rule.of(*m.Error.Code)
	}
	return s.status
}
