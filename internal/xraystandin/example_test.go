package xraystandin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/mcpfn/mcpfn/internal/xraystandin"
)

// A test points an emitter at the stand-in and waits for the span it
// expects; the local stack also keeps every document as a JSON line.
func Example() {
	d, err := xraystandin.Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer d.Close()
	d.SetOutput(os.Stdout)

	// What an X-Ray SDK sends: the header line, then one document.
	conn, _ := net.Dial("udp", d.Addr())
	fmt.Fprint(conn, `{"format": "json", "version": 1}`+"\n"+
		`{"type": "subsegment", "id": "53995c3f42cd8ad8", "trace_id": "1-5759e988-bd862e3fe1be46a994272793",
		  "parent_id": "70de5b6f19ff9a0a", "name": "mcpfn.call", "start_time": 1478293361.271, "end_time": 1478293361.449}`)
	conn.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	span, err := d.WaitFor(ctx, func(doc xraystandin.Document) bool { return doc.Name == "mcpfn.call" })
	if err != nil {
		panic(err)
	}
	fmt.Println(span.ParentID, span.EndTime-span.StartTime > 0)
	// Output:
	// {"type":"subsegment","id":"53995c3f42cd8ad8","trace_id":"1-5759e988-bd862e3fe1be46a994272793","parent_id":"70de5b6f19ff9a0a","name":"mcpfn.call","start_time":1478293361.271,"end_time":1478293361.449}
	// 70de5b6f19ff9a0a true
}
