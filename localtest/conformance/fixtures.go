// Package conformance holds the fixture tools that the official MCP
// conformance suite (@modelcontextprotocol/conformance) calls by name —
// simple text, image, audio, an embedded resource, mixed content, an error
// result, JSON Schema 2020-12 keywords — and the test that runs the suite and
// the MCP Inspector CLI against the local stack.
//
// The fixtures run only locally, but through the same path as every tool: each
// is its own Lambda function under the emulator (function/ is their one main,
// which serves the tool named by [EnvTool]), behind the gateway. So a passing
// scenario says something about mcpfn, not about a test double. Scenarios a
// tools-only stateless gateway cannot serve are listed, each with its reason,
// in baseline.json; docs/conformance.md has the pass count.
package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpfn/mcpfn/adapter"
)

// EnvTool names the fixture a function built from function/ serves: one
// binary, one tool per function, as the suite's tools are small.
const EnvTool = "MCPFN_CONFORMANCE_TOOL"

// The tool names the conformance suite calls.
const (
	ToolSimpleText       = "test_simple_text"
	ToolImage            = "test_image_content"
	ToolAudio            = "test_audio_content"
	ToolEmbeddedResource = "test_embedded_resource"
	ToolMixedContent     = "test_multiple_content_types"
	ToolError            = "test_error_handling"
	ToolJSONSchema2020   = "json_schema_2020_12_tool"
	ToolHeaderParam      = "test_header_param"
)

// Texts the suite's scenario descriptions ask for.
const (
	simpleText    = "This is a simple text response for testing."
	resourceURI   = "test://embedded-resource"
	resourceText  = "This is an embedded resource content."
	errorMessage  = "This tool intentionally returns an error for testing"
	mixedText     = "Multiple content types test:"
	mixedResource = "test://mixed-content-resource"
)

// none is the input of the fixtures that take no arguments.
type none struct{}

// blocks defines a no-argument, read-only tool answering with fixed content.
func blocks(name, description string, content func() []adapter.Block) *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        name,
		Description: description,
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(context.Context, *adapter.Call, none) (adapter.Content, error) {
			return adapter.Content{Blocks: content()}, nil
		},
	})
}

// SimpleText answers with one text block.
func SimpleText() *adapter.Tool {
	return blocks(ToolSimpleText, "Returns a simple text block.", func() []adapter.Block {
		return []adapter.Block{adapter.Text(simpleText)}
	})
}

// Image answers with a 1×1 red PNG.
func Image() *adapter.Tool {
	return blocks(ToolImage, "Returns a 1x1 red PNG image.", func() []adapter.Block {
		return []adapter.Block{adapter.Image(redPixelPNG(), "image/png")}
	})
}

// Audio answers with a short silent WAV clip.
func Audio() *adapter.Tool {
	return blocks(ToolAudio, "Returns a short silent WAV clip.", func() []adapter.Block {
		return []adapter.Block{adapter.Audio(silentWAV(), "audio/wav")}
	})
}

// EmbeddedResource answers with an embedded text resource.
func EmbeddedResource() *adapter.Tool {
	return blocks(ToolEmbeddedResource, "Returns an embedded text resource.", func() []adapter.Block {
		return []adapter.Block{adapter.TextResource(resourceURI, "text/plain", resourceText)}
	})
}

// MixedContent answers with text, an image and an embedded resource.
func MixedContent() *adapter.Tool {
	return blocks(ToolMixedContent, "Returns text, an image and an embedded resource.", func() []adapter.Block {
		return []adapter.Block{
			adapter.Text(mixedText),
			adapter.Image(redPixelPNG(), "image/png"),
			adapter.TextResource(mixedResource, "application/json", `{"test":"data","value":123}`),
		}
	})
}

// Error always fails with a tool error (isError: true), the way a handler
// reports a failure the model should read.
func Error() *adapter.Tool {
	return adapter.MustDefine(adapter.ToolDef[none, adapter.Content]{
		Name:        ToolError,
		Description: "Always fails with a tool error.",
		ReadOnly:    true,
		Handler: func(context.Context, *adapter.Call, none) (adapter.Content, error) {
			return adapter.Content{}, adapter.NewError(adapter.CodeConflict, errorMessage)
		},
	})
}

// jsonSchema2020 is the input schema the suite looks for on tools/list: the
// 2020-12 keywords ($schema, $defs with an $anchor, allOf/anyOf, if/then/else,
// additionalProperties) must survive the gateway's tools/list untouched.
const jsonSchema2020 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "$anchor": "addressDef",
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"},
    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
    "phone": {"type": "string"},
    "email": {"type": "string"}
  },
  "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
  "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
  "then": {"required": ["phone"]},
  "else": {"required": ["email"]},
  "additionalProperties": false
}`

// JSONSchema2020 has an input schema using JSON Schema 2020-12 keywords; the
// function validates calls against that same schema.
func JSONSchema2020() *adapter.Tool {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(jsonSchema2020), &s); err != nil {
		panic(fmt.Sprintf("conformance: %s schema: %v", ToolJSONSchema2020, err))
	}
	return adapter.MustDefine(adapter.ToolDef[map[string]any, adapter.Content]{
		Name:        ToolJSONSchema2020,
		Description: "Tool with JSON Schema 2020-12 features",
		ReadOnly:    true,
		InputSchema: &s,
		Handler: func(context.Context, *adapter.Call, map[string]any) (adapter.Content, error) {
			return adapter.Content{Blocks: []adapter.Block{adapter.Text("ok")}}, nil
		},
	})
}

// headerParamSchema mirrors its region argument into an Mcp-Param-Region
// HTTP header (SEP-2243), so an HTTP layer can route on it without parsing
// the body; the gateway (go-sdk) must check that header against the body.
const headerParamSchema = `{
  "type": "object",
  "properties": {
    "region": {"type": "string", "x-mcp-header": "Region", "description": "echoed back; also sent as the Mcp-Param-Region header"}
  },
  "required": ["region"],
  "additionalProperties": false
}`

// HeaderParam echoes an argument that clients also send as a header.
func HeaderParam() *adapter.Tool {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(headerParamSchema), &s); err != nil {
		panic(fmt.Sprintf("conformance: %s schema: %v", ToolHeaderParam, err))
	}
	type in struct {
		Region string `json:"region"`
	}
	return adapter.MustDefine(adapter.ToolDef[in, adapter.Content]{
		Name:        ToolHeaderParam,
		Description: "Echoes its region argument, which clients also send as the Mcp-Param-Region header.",
		ReadOnly:    true,
		InputSchema: &s,
		Handler: func(_ context.Context, _ *adapter.Call, in in) (adapter.Content, error) {
			return adapter.Content{Blocks: []adapter.Block{adapter.Text("region: " + in.Region)}}, nil
		},
	})
}

// constructors are the fixtures by tool name.
var constructors = map[string]func() *adapter.Tool{
	ToolSimpleText:       SimpleText,
	ToolImage:            Image,
	ToolAudio:            Audio,
	ToolEmbeddedResource: EmbeddedResource,
	ToolMixedContent:     MixedContent,
	ToolError:            Error,
	ToolJSONSchema2020:   JSONSchema2020,
	ToolHeaderParam:      HeaderParam,

	ToolIRElicitation:  IRElicitation,
	ToolIRSampling:     IRSampling,
	ToolIRListRoots:    IRListRoots,
	ToolIRRequestState: IRRequestState,
	ToolIRMultiple:     IRMultiple,
	ToolIRMultiRound:   IRMultiRound,
	ToolIRTampered:     IRTampered,
	ToolIRCapabilities: IRCapabilities,

	ToolProgress:         Progress,
	ToolLogging:          Logging,
	ToolGreet:            Greet,
	ToolSlowCompute:      SlowCompute,
	ToolFailingJob:       FailingJob,
	ToolProtocolErrorJob: ProtocolErrorJob,
	ToolConfirmDelete:    ConfirmDelete,
	ToolMultiInput:       MultiInput,
	ToolWithTask:         WithTask,
}

// Names returns the fixtures' tool names, sorted.
func Names() []string {
	names := make([]string, 0, len(constructors))
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Catalog returns every fixture tool, in the order of [Names].
func Catalog() []*adapter.Tool {
	var tools []*adapter.Tool
	for _, n := range Names() {
		tools = append(tools, constructors[n]())
	}
	return tools
}

// ByName returns the fixture tool called name, or an error naming the known
// ones (a function started with a wrong EnvTool fails at cold start).
func ByName(name string) (*adapter.Tool, error) {
	c, ok := constructors[name]
	if name == ToolCrashJob {
		c, ok = CrashJob, true // the local stack's, not the suite's
	}
	if !ok {
		return nil, fmt.Errorf("conformance: no fixture tool %q (%s=%q); known: %v", name, EnvTool, name, Names())
	}
	return c(), nil
}

// redPixelPNG encodes a 1×1 red image. Encoding it here keeps binary blobs
// out of the repository and makes the bytes obviously what they claim to be.
func redPixelPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // an in-memory 1×1 image cannot fail to encode
	}
	return b.Bytes()
}

// silentWAV is 10 ms of 8 kHz mono 16-bit PCM silence: the smallest clip
// every audio decoder accepts.
func silentWAV() []byte {
	const rate, samples = 8000, 80
	data := make([]byte, samples*2)
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + len(data)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))       // fmt chunk size
	w(uint16(1))        // PCM
	w(uint16(1))        // mono
	w(uint32(rate))     // sample rate
	w(uint32(rate * 2)) // byte rate
	w(uint16(2))        // block align
	w(uint16(16))       // bits per sample
	b.WriteString("data")
	w(uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}
