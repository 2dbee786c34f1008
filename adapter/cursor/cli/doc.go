// Package cli runs the Cursor CLI (cursor-agent, also installed as agent)
// headless, one turn at a time, and classifies every way a turn can end.
//
// It finds and admits the executable (CURSOR_BIN, else cursor-agent, else
// agent on PATH; the first that passes the compatibility probe), reports the
// backend's health and catalog values, maps the three permission modes to
// flags, keeps a session's resume id and instruction bookkeeping, and runs a
// turn in print mode with --output-format stream-json under hard limits, in
// its own process group and, in a host that called EnableGuardProcess, below
// a guard process. The stream-json parser is package stream below this one;
// package acpupdate maps a turn's events to ACP session updates. The rules
// it implements are docs/cursor-cli.md of this repository. Linux only.
//
// The API in one screen:
//
//	cli.EnableGuardProcess()                // first thing in main: turns run under a guard process (optional)
//	d := &cli.Discoverer{}                  // CURSOR_BIN, else cursor-agent, else agent
//	cli.HealthCapability()                  // capabilities.cursor_backend: available, version 2, prompt-envelope instructions
//	entry, exe := d.Catalog(ctx)            // available only if compatible AND logged in; exe is the admitted CLI
//	models, _ := exe.ListModels(ctx)        // --list-models or `models`; cli.ParseModelList for raw text
//
//	st, saveBack, _ := cli.LoadSessionState(stored) // legacy or unknown mode → "default" (saveBack=true)
//	mode, err := cli.ParsePermissionMode(apiValue)  // API writes: exactly default|full_access|plan
//	plan := st.PlanTurn(cli.Instructions{Prelude: p, SystemPrompt: s}, userPrompt)
//
//	mapper := acpupdate.New(acpSessionID)   // runner events → acp.SessionNotification
//	r := &cli.Runner{Executable: exe}       // Timeouts, Limits, Transport, Env, KnownModels, Logger
//	res, err := r.Run(ctx, cli.Turn{Plan: plan, Dir: ws, Model: m,
//		OnEvent:     mapper.Forward(send), // send(acp.SessionNotification) feeds tracker, view, store
//		OnSessionID: func(id string) { st.RecordSessionID(id); persist(st) }})
//	st.Commit(plan, res)                    // id always; instruction hash and fork memory only on success
//	for _, n := range mapper.Finish(res) {  // closes tool cards a failed turn left open
//		send(n)
//	}
//
//	fork := st.Fork(memory)                 // no provider id, same mode, memory once
//	job := cli.Standalone(mode)             // shares nothing with a parent chat
//
// Run returns a non-nil error only for refusals before spawning
// (errors.Is(err, ErrRefused): an invalid resume id, a flag-like or unknown
// model, an empty prompt, an envelope over the argv limit, no executable).
// Every other failure is a Result with IsError true, an empty FinalText, a
// Class, a one-line redacted Detail, the ANSI-stripped redacted standard
// error tail and a Hint for known texts. See the Runner.Run example.
package cli
