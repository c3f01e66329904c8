package recent_test

import (
	"slices"
	"testing"

	"github.com/mcpfn/mcpfn/internal/recent"
)

func TestWindowKeepsTheLastItems(t *testing.T) {
	w := recent.New[int](3)
	for i := range 10 {
		w.Add(i)
		if w.Len() > 3 {
			t.Fatalf("after %d adds the window holds %d items, cap 3", i+1, w.Len())
		}
	}
	if got := w.All(); !slices.Equal(got, []int{7, 8, 9}) {
		t.Fatalf("All = %v, want [7 8 9]", got)
	}
	if w.Next() != 10 || w.Oldest() != 7 {
		t.Fatalf("Next %d Oldest %d, want 10 and 7", w.Next(), w.Oldest())
	}
}

func TestSinceResumesAndCountsWhatWasDropped(t *testing.T) {
	w := recent.New[string](2)
	items, next, dropped := w.Since(0)
	if len(items) != 0 || next != 0 || dropped != 0 {
		t.Fatalf("empty window: %v %d %d", items, next, dropped)
	}
	w.Add("a")
	items, next, _ = w.Since(next)
	if !slices.Equal(items, []string{"a"}) || next != 1 {
		t.Fatalf("after a: %v %d", items, next)
	}
	w.Add("b")
	w.Add("c")
	w.Add("d") // "b" leaves the window unseen
	items, next, dropped = w.Since(next)
	if !slices.Equal(items, []string{"c", "d"}) || next != 4 || dropped != 1 {
		t.Fatalf("after b c d: %v next %d dropped %d, want [c d] 4 1", items, next, dropped)
	}
	if items, _, _ = w.Since(next); len(items) != 0 {
		t.Fatalf("nothing new: %v", items)
	}
}

func TestResetKeepsPositions(t *testing.T) {
	w := recent.New[int](4)
	w.Add(1)
	w.Add(2)
	_, pos, _ := w.Since(0)
	w.Reset()
	if w.Len() != 0 {
		t.Fatalf("%d items after Reset", w.Len())
	}
	w.Add(3)
	if items, _, dropped := w.Since(pos); !slices.Equal(items, []int{3}) || dropped != 0 {
		t.Fatalf("after Reset: %v dropped %d, want [3] 0", items, dropped)
	}
	if items, _, _ := w.Since(0); !slices.Equal(items, []int{3}) {
		t.Fatalf("from the start after Reset: %v, want [3]", items)
	}
}

func TestResizeKeepsTheNewest(t *testing.T) {
	w := recent.New[int](5)
	for i := range 7 {
		w.Add(i)
	}
	w.Resize(2)
	if got := w.All(); !slices.Equal(got, []int{5, 6}) || w.Cap() != 2 {
		t.Fatalf("after Resize(2): %v cap %d", got, w.Cap())
	}
	w.Add(7)
	if got := w.All(); !slices.Equal(got, []int{6, 7}) {
		t.Fatalf("after one more: %v", got)
	}
	if recent.New[int](0).Cap() != recent.DefaultCap {
		t.Fatal("New(0) is not DefaultCap")
	}
}
