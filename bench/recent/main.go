// Command recent times the audit viewer's listing (audit.Auditor.RecentRows,
// newest 100) on a DynamoDB Local table of -n audit rows of about 1 KB,
// read as one unsplit Scan (the table described as empty) and in segments
// (as the viewer reads it), alternated -rounds times; and the viewer's
// caller page (newest 100 rows of one byCaller partition: every row is one
// caller's):
//
//	go run ./bench/recent -n 50000 -rounds 2
//
// docs/benchmarks.md, "DynamoDB Local under a long session", has its
// figures. The emulator runs with a 2 GiB heap (the local stack's).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mcpfn/mcpfn/audit"
	"github.com/mcpfn/mcpfn/internal/dynamolocal"
	"github.com/mcpfn/mcpfn/internal/samtemplate"
)

// described reports the table's item count as items (the real count when
// items < 0): 0 makes RecentRows read the table in one unsplit Scan.
type described struct {
	*dynamodb.Client
	items int64
}

func (c described) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.Client.DescribeTable(ctx, in, o...)
	if err == nil && c.items >= 0 {
		out.Table.ItemCount = aws.Int64(c.items)
	}
	return out, err
}

func main() {
	n := flag.Int("n", 20000, "rows in the table")
	rounds := flag.Int("rounds", 3, "times each way")
	flag.Parse()
	if err := run(*n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "recent:", err)
		os.Exit(1)
	}
}

func run(n, rounds int) error {
	ctx := context.Background()
	srv, err := dynamolocal.Start(ctx, dynamolocal.Options{MaxHeap: "2g"})
	if err != nil {
		return err
	}
	defer srv.Stop()
	tmpl, err := samtemplate.LoadRepo()
	if err != nil {
		return err
	}
	in, err := tmpl.TableInput("AuditTable", "audit")
	if err != nil {
		return err
	}
	if err := srv.CreateTable(ctx, in); err != nil {
		return err
	}
	c := srv.Client(ctx)
	a := audit.New(audit.Config{Table: "audit", Client: c, Fallback: os.Stderr})
	base := time.Now().Add(-time.Hour)
	pad := make([]byte, 700)
	for i := range pad {
		pad[i] = 'x'
	}
	began := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				row := &audit.Row{Tool: "broadcast_get", CallID: fmt.Sprintf("call-%07d", i), StartedAt: base.Add(time.Duration(i) * time.Millisecond),
					Status: audit.StatusDone, ArgsPreview: string(pad), TraceID: "1-00000000-000000000000000000000000",
					CallerSubject: "user-1", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example"}
				a.Record(ctx, row)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Printf("wrote %d rows in %v\n", n, time.Since(began).Round(time.Millisecond))
	for r := range rounds {
		for _, mode := range []struct {
			name  string
			items int64
		}{{"unsplit", 0}, {"segments", -1}} {
			v := audit.New(audit.Config{Table: "audit", Client: described{c, mode.items}, Fallback: os.Stderr})
			t0 := time.Now()
			rows, _, err := v.RecentRows(ctx, audit.QueryOptions{Limit: 100})
			if err != nil {
				return fmt.Errorf("%s: %w", mode.name, err)
			}
			fmt.Printf("round %d  %-8s  %d rows  %v\n", r+1, mode.name, len(rows), time.Since(t0).Round(time.Millisecond))
		}
		// The viewer's caller page: a Query of one byCaller partition
		// (every row is one caller's), newest 100.
		key := audit.CallerKeyOf(&audit.Row{CallerSubject: "user-1", CallerAuthMethod: "jwt", CallerIssuer: "https://issuer.example"})
		t0 := time.Now()
		rows, err := a.CallerKeyRows(ctx, key, audit.QueryOptions{Limit: 100, Newest: true})
		if err != nil {
			return fmt.Errorf("caller: %w", err)
		}
		fmt.Printf("round %d  %-8s  %d rows  %v\n", r+1, "caller", len(rows), time.Since(t0).Round(time.Millisecond))
	}
	return nil
}
