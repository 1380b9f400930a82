module github.com/roundtable-go/roundtable

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/beevik/ntp v1.6.0
	github.com/fatih/color v1.19.0
	github.com/hashicorp/go-sockaddr v1.0.7
	github.com/mattn/go-isatty v0.0.24
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sync v0.24.0
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
