package main

import (
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

func TestFlags(t *testing.T) { clitest.CheckFlags(t, newApp()) }

func TestManPage(t *testing.T) { clitest.CheckMan(t, newApp()) }
