package node_test

import (
	"fmt"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

func TestParseID(t *testing.T) {
	for s, want := range map[string]node.ID{"1": 1, "4294967295": 4294967295} {
		if got, err := node.ParseID(s); err != nil || got != want {
			t.Errorf("ParseID(%q) = %v, %v", s, got, err)
		}
	}
	for _, bad := range []string{"0", "-1", "4294967296", "x", ""} {
		if _, err := node.ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func ExampleParseID() {
	id, err := node.ParseID("3")
	fmt.Println(id, err)
	_, err = node.ParseID("0")
	fmt.Println(err)
	// Output:
	// 3 <nil>
	// node: invalid id "0" (want an integer from 1 to 4294967295)
}
