// Package clock supplies time to drivers and simulators. Protocol machines
// never read a clock; they are handed `now` by whoever runs them, and that
// caller gets it from a Clock here.
//
// System is the real clock; Manual is a virtual clock moved by hand; Skewed
// is another clock seen through a fixed offset and a frequency error, for
// nodes that are deliberately wrong.
package clock
