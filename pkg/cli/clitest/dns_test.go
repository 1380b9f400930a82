package clitest

import (
	"fmt"
	"net"
	"testing"
)

// TestSharedPort: the port is free on 127.0.0.1, .2 and .3 together: three
// members can each bind it on their own address.
func TestSharedPort(t *testing.T) {
	port := SharedPort(t, 3)
	for i := 1; i <= 3; i++ {
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.%d:%d", i, port))
		if err != nil {
			t.Fatalf("port %d on 127.0.0.%d: %v", port, i, err)
		}
		defer c.Close()
	}
}
