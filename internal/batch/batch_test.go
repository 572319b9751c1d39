package batch

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestGathersWhileInFlight: the calls made while one is in flight go
// together in the next (at most Max items), each caller gets its own
// result, and an error reaches every caller of its call only.
func TestGathersWhileInFlight(t *testing.T) {
	b := Batcher[int, string]{Max: 3}
	release := make(chan struct{})
	var mu sync.Mutex
	var calls [][]int
	send := func(_ context.Context, items []int) ([]string, error) {
		mu.Lock()
		calls = append(calls, slices.Clone(items))
		first := len(calls) == 1
		mu.Unlock()
		if first {
			<-release
		}
		if slices.Contains(items, 4) {
			return nil, errors.New("boom")
		}
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = strconv.Itoa(it * 10)
		}
		return out, nil
	}
	type answer struct {
		item int
		res  string
		err  error
	}
	answers := make(chan answer, 6)
	do := func(i int) {
		res, err := b.Do(t.Context(), "k", i, send)
		answers <- answer{i, res, err}
	}
	go do(0)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 1 })
	for i := 1; i <= 5; i++ {
		go do(i)
	}
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting["k"]) == 5 })
	close(release)
	var got []answer
	for range 6 {
		got = append(got, <-answers)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range got {
		wantErr := a.item == 4 || (a.item > 0 && slices.ContainsFunc(calls, func(c []int) bool { return slices.Contains(c, 4) && slices.Contains(c, a.item) }))
		if (a.err != nil) != wantErr || (a.err == nil && a.res != strconv.Itoa(a.item*10)) {
			t.Errorf("item %d: %q, %v", a.item, a.res, a.err)
		}
	}
	if len(calls) != 3 || len(calls[1]) != 3 || len(calls[2]) != 2 {
		t.Errorf("calls %v: want [0], then the five others in calls of at most 3", calls)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) != 0 || len(b.sending) != 0 {
		t.Errorf("left behind: %v %v", b.waiting, b.sending)
	}
}

// TestManyCallers: every caller gets its answer, however they interleave.
func TestManyCallers(t *testing.T) {
	var b Batcher[int, int]
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Do(t.Context(), strconv.Itoa(i%3), i, func(_ context.Context, items []int) ([]int, error) {
				mu.Lock()
				sent++
				mu.Unlock()
				time.Sleep(time.Millisecond)
				return items, nil
			})
			if err != nil || res != i {
				t.Errorf("item %d: %d %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	t.Logf("500 items in %d calls", sent)
	if sent >= 500 {
		t.Errorf("no call carried more than one item")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
	}
}

// TestWaitHook: a caller that waits for another's call is told so (and
// told when the wait ends, before it returns or sends); the sender is not.
func TestWaitHook(t *testing.T) {
	var mu sync.Mutex
	waiting, resumed := 0, 0
	b := Batcher[int, int]{Wait: func(context.Context) func() {
		mu.Lock()
		waiting++
		mu.Unlock()
		return func() { mu.Lock(); resumed++; mu.Unlock() }
	}}
	release := make(chan struct{})
	send := func(_ context.Context, items []int) ([]int, error) {
		if slices.Contains(items, 0) {
			<-release
		}
		return items, nil
	}
	done := make(chan struct{}, 3)
	go func() { _, _ = b.Do(t.Context(), "k", 0, send); done <- struct{}{} }()
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.sending["k"] && len(b.waiting["k"]) == 0 })
	for i := 1; i <= 2; i++ {
		go func() { _, _ = b.Do(t.Context(), "k", i, send); done <- struct{}{} }()
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return waiting == 2 })
	close(release)
	for range 3 {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	if waiting != 2 || resumed != 2 {
		t.Errorf("waits %d, resumed %d; want the two callers that waited", waiting, resumed)
	}
}

// TestLingerGathersWhenCrowded: with Linger set, a call is sent at once
// while callers come alone; once a call has carried more than one item,
// the next call waits for company (here until Max items, since Linger is
// an hour) instead of going alone.
func TestLingerGathersWhenCrowded(t *testing.T) {
	b := Batcher[int, int]{Max: 4, Linger: time.Hour}
	release := make(chan struct{})
	var mu sync.Mutex
	var calls [][]int
	send := func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		calls = append(calls, slices.Clone(items))
		mu.Unlock()
		if slices.Contains(items, 0) {
			<-release
		}
		return items, nil
	}
	ncalls := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }
	done := make(chan int, 7)
	do := func(i int) {
		res, err := b.Do(t.Context(), "k", i, send)
		if err != nil || res != i {
			t.Errorf("item %d: %d, %v", i, res, err)
		}
		done <- i
	}
	go do(0) // alone: sent at once (an hour's linger would hang the test)
	waitFor(t, func() bool { return ncalls() == 1 })
	go do(1)
	go do(2)
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting["k"]) == 2 })
	close(release)
	for range 3 {
		<-done
	}
	go do(3) // the last call carried two items: this one waits for company
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting["k"]) == 1 })
	for i := 4; i <= 6; i++ {
		go do(i)
	}
	for range 4 {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	want := [][]int{{0}, {1, 2}, {3, 4, 5, 6}}
	if len(calls) != 3 || !slices.Equal(calls[0], want[0]) || len(calls[1]) != 2 || len(calls[2]) != 4 {
		t.Errorf("calls %v, want %v (in any order within a call)", calls, want)
	}
}
