// Package example holds the end-to-end test of the example programs: the
// agent in example/agent and the client in example/client are built and
// complete a turn with each other over a real subprocess's stdio.
package example
