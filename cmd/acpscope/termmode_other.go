//go:build !linux

package main

import "io"

// lineMode is Linux's only: elsewhere lines are read as the terminal's
// canonical mode gives them (nil: the mode was not changed).
func lineMode(io.Reader) func() { return nil }
