//go:build unix

// Command wake measures what waking a blocked thread costs on this machine
// after it has been idle for a while: two OS threads pass a byte back and
// forth over pipes, and before each round trip both sleep for the idle time.
// On a VM whose idle CPUs halt, a round trip after an idle longer than the
// host's polling window costs several times one after a short idle; every
// hop of a request pays it. docs/benchmarks.md, "On Go 1.27.3, and what the
// ratio measures".
//
//	go run ./bench/wake
package main

import (
	"flag"
	"fmt"
	"log"
	"runtime"
	"slices"
	"syscall"
	"time"
)

func main() {
	rounds := flag.Int("n", 400, "round trips per idle time")
	flag.Parse()
	var ping, pong [2]int
	if err := syscall.Pipe(ping[:]); err != nil {
		log.Fatal(err)
	}
	if err := syscall.Pipe(pong[:]); err != nil {
		log.Fatal(err)
	}
	go echo(ping[0], pong[1])
	runtime.LockOSThread()
	b := make([]byte, 1)
	fmt.Println("| idle before the round trip | p50 | p90 |")
	fmt.Println("|---|---|---|")
	for _, idle := range []time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond,
		500 * time.Microsecond, time.Millisecond, 3 * time.Millisecond} {
		rtt := make([]time.Duration, 0, *rounds)
		for range *rounds {
			if idle > 0 {
				ts := syscall.NsecToTimespec(int64(idle))
				_ = syscall.Nanosleep(&ts, nil)
			}
			t := time.Now()
			if _, err := syscall.Write(ping[1], b); err != nil {
				log.Fatal(err)
			}
			if _, err := syscall.Read(pong[0], b); err != nil {
				log.Fatal(err)
			}
			rtt = append(rtt, time.Since(t))
		}
		slices.Sort(rtt)
		fmt.Printf("| %v | %.1f µs | %.1f µs |\n", idle, us(rtt[len(rtt)/2]), us(rtt[len(rtt)*9/10]))
	}
}

// echo, on a thread of its own, writes back every byte it reads.
func echo(in, out int) {
	runtime.LockOSThread()
	b := make([]byte, 1)
	for {
		if _, err := syscall.Read(in, b); err != nil {
			log.Fatal(err)
		}
		if _, err := syscall.Write(out, b); err != nil {
			log.Fatal(err)
		}
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
