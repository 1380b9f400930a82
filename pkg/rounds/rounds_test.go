package rounds

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/node"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	s := Schedule{Start: time.Unix(100, 0), Length: 50 * time.Millisecond}
	if s.Round(time.Unix(99, 0)) != 0 || s.Round(s.Start) != 1 || s.Round(s.End(1)) != 2 {
		t.Fatal("round numbering")
	}
	a := Align(time.Unix(200, 0), 3, time.Second)
	if !a.Start.Equal(time.Unix(198, 0)) || a.Round(time.Unix(200, 0)) != 3 {
		t.Fatalf("align: %v", a.Start)
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker([]node.ID{3, 1, 2})
	tr.Begin(1)
	tr.Heard(1)
	if tr.Complete() {
		t.Fatal("complete with 2 and 3 silent")
	}
	if got := tr.Expire(); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("expire: %v", got)
	}
	if !tr.Complete() {
		t.Fatal("suspected peers still awaited")
	}
	tr.Begin(2)
	if tr.Complete() {
		t.Fatal("round 2 complete before 1 was heard")
	}
	tr.Heard(1)
	if !tr.Complete() || !tr.Suspected(3) {
		t.Fatal("round 2")
	}
	tr.Heard(3)
	if tr.Suspected(3) {
		t.Fatal("a peer heard again stays suspected")
	}
}

func TestMajority(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"a", "a", "b"}, "a"},
		{[]string{"a", "b"}, "d"},
		{[]string{"a", "b", "c"}, "d"},
		{nil, "d"},
		{[]string{"b", "b", "a", "a"}, "d"},
	}
	for _, c := range cases {
		if got := Majority(c.in, "d"); got != c.want {
			t.Errorf("Majority(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func ExampleMajority() {
	fmt.Println(Majority([]string{"attack", "retreat", "attack"}, "retreat"))
	fmt.Println(Majority([]string{"attack", "retreat"}, "retreat"))
	// Output:
	// attack
	// retreat
}
