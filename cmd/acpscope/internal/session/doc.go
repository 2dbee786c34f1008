// Package session is acpscope's client stack: it starts an ACP agent (or
// plays a capture's agent side), initializes it, opens or reopens a
// session and drives its turns, cancels a turn the same way whatever ends
// it, and feeds every update through the adapter tracker to the live view
// and the store sink. `acpscope run` and `acpscope replay` share it (and
// a coming `tap` will); package main keeps the flags and the wiring.
//
// The client answers the agent's requests by policy: fs/read_text_file
// only below the session's working directory (opened beneath it in one
// step), permissions by --permission, unknown methods through the
// dialect, terminals and writes refused.
package session
