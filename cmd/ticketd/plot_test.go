//go:build plot

package main

import "github.com/roundtable-go/roundtable/pkg/cli/clitest"

// With -tags plot, the ticketd under test draws plots too.
func init() { clitest.Tags = "plot" }
