// Package cli holds what every roundtable binary shares on the command line:
// common flags with environment variables (<TOOL>_<FLAG>), peer lists,
// bind-address templates, event output (one line per event, or JSON lines),
// logging to stderr (coloured only on a terminal), ready files, the exit
// code table, and supervision of a child command.
//
// The exit code table and child supervision are package proc's (it
// imports only the standard library, for quick clients); cli re-exports
// them.
package cli
