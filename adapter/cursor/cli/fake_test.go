package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The fake Cursor CLI is this test binary re-executed with FakeEnv=1 (see
// TestMain). Its behaviour is selected by environment variables:
//
//	CURSORFAKE_HELP    compatible (default) | legacy | foreign | hang | models-subcommand
//	CURSORFAKE_STATUS  in (default) | out
//	CURSORFAKE_SCRIPT  the turn script, one step per line (see runScript)
//	CURSORFAKE_RECORD  file receiving argv, stdin and selected env as JSON
//	CURSORFAKE_ROLE    sleeper: a descendant that just waits to be killed
//	CURSORFAKE_RUN     which test process wrote the fake (see fakeRunMarker)
const (
	fakeEnv       = "CURSORFAKE"
	fakeHelpEnv   = "CURSORFAKE_HELP"
	fakeStatusEnv = "CURSORFAKE_STATUS"
	fakeScriptEnv = "CURSORFAKE_SCRIPT"
	fakeRecordEnv = "CURSORFAKE_RECORD"
	fakeRoleEnv   = "CURSORFAKE_ROLE"
	fakeRunEnv    = "CURSORFAKE_RUN"
)

const compatibleHelp = `Usage: cursor-agent [options] [command] [prompt...]

Start the Cursor Agent

Options:
  -v, --version                 Output the version number
  --api-key <key>               API key for authentication
  -p, --print                   Print responses to console (for scripts or non-interactive use)
  --output-format <format>      Output format (only works with --print): text | json | stream-json (default: "text")
  --resume [chatId]             Resume a chat session
  --model <model>               Model to use (e.g., gpt-5, sonnet-4)
  --mode <mode>                 Start in the given execution mode: plan | ask
  -f, --force                   Force allow commands unless explicitly denied
  --trust                       Trust the current workspace without prompting
  --list-models                 List available models and exit
  -h, --help                    Display help for command

Commands:
  login                         Authenticate with Cursor
  status|whoami                 Check authentication status
  about                         Display version and system information
`

// legacyHelp lacks --trust, --mode and model listing.
const legacyHelp = `Usage: cursor-agent [options] [prompt...]
Options:
  -p, --print                   Print responses to console
  --output-format <format>      text | json | stream-json
  --resume [chatId]             Resume a chat session
  --model <model>               Model to use
  -f, --force                   Force allow commands
`

const foreignHelp = `agent - a generic automation agent
usage: agent run <task> [--verbose]
`

const modelsSubcommandHelp = `Usage: agent [options] [command]
Options:
  -p, --print                   Print responses
  --output-format <format>      text | json | stream-json
  --resume [chatId]             Resume a chat session
  --model <model>               Model to use
  --mode <mode>                 plan | ask
  --force                       Force allow commands
  --trust                       Trust the workspace
Commands:
  models                        List available models
  status                        Check authentication status
`

const fakeModelList = "\x1b[1mAvailable models\x1b[0m\n\n" +
	"auto - Auto (current, default)\n" +
	"\x1b[36mgpt-5\x1b[0m - GPT-5\n" +
	"claude-opus-4-8[context=1m,effort=high,fast=false] - Claude Opus 4.8 (1M, high)\n" +
	"sonnet-4 - Sonnet 4 (default)\n" +
	"\n" +
	"Tip: use --model <id> (or /model <id> in interactive mode) to switch.\n"

// fakeMain is the fake CLI's entry point.
func fakeMain() int {
	if os.Getenv(fakeRoleEnv) == "middle" {
		return middleMain()
	}
	if os.Getenv(fakeRoleEnv) == "sleeper" {
		if os.Getenv("CURSORFAKE_SLEEPER_IGNORE_TERM") == "1" {
			signal.Ignore(syscall.SIGTERM)
		}
		time.Sleep(time.Hour)
		return 0
	}
	args := os.Args[1:]
	has := func(a string) bool {
		for _, x := range args {
			if x == a {
				return true
			}
		}
		return false
	}
	switch {
	case has("--help"):
		switch os.Getenv(fakeHelpEnv) {
		case "legacy":
			fmt.Print(legacyHelp)
		case "foreign":
			fmt.Print(foreignHelp)
		case "models-subcommand":
			fmt.Print(modelsSubcommandHelp)
		case "hang":
			signal.Ignore(syscall.SIGTERM)
			time.Sleep(time.Hour)
		default:
			fmt.Print(compatibleHelp)
		}
		return 0
	case has("--version"):
		fmt.Println("2026.08.11-e8db854")
		return 0
	case len(args) > 0 && args[0] == "status":
		if os.Getenv(fakeStatusEnv) == "out" {
			fmt.Println("Not logged in")
			return 1
		}
		fmt.Println("\x1b[32m✓\x1b[0m Logged in as someone@example.com")
		return 0
	case has("--list-models") || (len(args) > 0 && args[0] == "models"):
		fmt.Print(fakeModelList)
		return 0
	case has("-p"):
		return runScript(args)
	}
	fmt.Fprintln(os.Stderr, "fake: unexpected arguments")
	return 2
}

// fakeRecord is what a fake turn records for assertions.
type fakeRecord struct {
	Args  []string          `json:"args"`
	Stdin string            `json:"stdin"`
	Env   map[string]string `json:"env"`
	Dir   string            `json:"dir"`
}

// runScript executes CURSORFAKE_SCRIPT. Steps:
//
//	out <text>          print text and a newline on stdout
//	batch <a>\x1e<b>…    print several lines in one write
//	raw <text>          print text without a newline
//	err <text>          print text and a newline on stderr
//	sleep <ms>          sleep
//	exit <code>         exit now
//	ignore-term         ignore SIGTERM from here on
//	record              write argv, stdin (read to EOF) and env to CURSORFAKE_RECORD
//	bigline <bytes>     one stdout line of that many bytes
//	stderrflood <bytes> that many bytes on stderr
//	spawn-detached [ignore-term]   start a setsid descendant holding stdout
//	spawn-doublefork    a middle process starts a setsid descendant and exits at once
//	spawn-child         a descendant in the same process group holding stdout
//	pids <file>         write "PID PPID SPAWNED…" (this fake, its parent, the
//	                    descendants spawned so far) to file, atomically
//	retry-forever <ms>  emit a retry event every ms, forever
//	hang                sleep for an hour
func runScript(args []string) int {
	script := os.Getenv(fakeScriptEnv)
	if path := os.Getenv(fakeScriptEnv + "_FILE"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 3
		}
		script = string(b)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	flush := func() { _ = w.Flush() }
	var spawned []int
	for _, step := range strings.Split(script, "\n") {
		verb, rest, _ := strings.Cut(strings.TrimLeft(step, " \t"), " ")
		switch verb {
		case "":
		case "out":
			w.WriteString(rest)
			w.WriteByte('\n')
			flush()
		case "batch":
			// Several lines, separated by \x1e, in one write: no
			// scheduling gap can fall between them.
			w.WriteString(strings.ReplaceAll(rest, "\x1e", "\n"))
			w.WriteByte('\n')
			flush()
		case "raw":
			w.WriteString(rest)
			flush()
		case "err":
			fmt.Fprintln(os.Stderr, rest)
		case "sleep":
			ms, _ := strconv.Atoi(rest)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case "exit":
			flush()
			code, _ := strconv.Atoi(rest)
			return code
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "record":
			rec := fakeRecord{Args: args, Env: map[string]string{}}
			if b, err := io.ReadAll(os.Stdin); err == nil {
				rec.Stdin = string(b)
			}
			rec.Dir, _ = os.Getwd()
			for _, k := range []string{"NO_COLOR", "CURSOR_API_KEY", "PATH"} {
				if v, ok := os.LookupEnv(k); ok {
					rec.Env[k] = v
				}
			}
			b, _ := json.Marshal(rec)
			_ = os.WriteFile(os.Getenv(fakeRecordEnv), b, 0o600)
		case "bigline":
			n, _ := strconv.Atoi(rest)
			chunk := strings.Repeat("x", 1<<16)
			for n > 0 {
				k := min(n, len(chunk))
				w.WriteString(chunk[:k])
				n -= k
			}
			w.WriteByte('\n')
			flush()
		case "stderrflood":
			n, _ := strconv.Atoi(rest)
			chunk := []byte(strings.Repeat("e", 1<<16))
			for n > 0 {
				k := min(n, len(chunk))
				_, _ = os.Stderr.Write(chunk[:k])
				n -= k
			}
		case "spawn-detached":
			spawned = append(spawned, spawnSleeper(true, rest == "ignore-term"))
		case "spawn-child":
			spawned = append(spawned, spawnSleeper(false, false))
		case "pids":
			line := fmt.Sprint(os.Getpid(), " ", os.Getppid())
			for _, pid := range spawned {
				line += " " + strconv.Itoa(pid)
			}
			if err := os.WriteFile(rest+".tmp", []byte(line+"\n"), 0o600); err == nil {
				_ = os.Rename(rest+".tmp", rest)
			}
		case "spawn-doublefork":
			self, _ := os.Executable()
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), fakeRoleEnv+"=middle")
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "fake: middle:", err)
			}
		case "retry-forever":
			ms, _ := strconv.Atoi(rest)
			for i := 1; ; i++ {
				fmt.Fprintf(w, `{"type":"retry","subtype":"starting","attempt":%d,"session_id":"s"}`+"\n", i)
				flush()
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
		case "hang":
			flush()
			time.Sleep(time.Hour)
		default:
			fmt.Fprintln(os.Stderr, "fake: unknown step", verb)
			return 3
		}
	}
	flush()
	return 0
}

// spawnSleeper starts a descendant holding stdout: in a new session when
// detached, else in the fake's own process group. It returns its pid (0 on
// failure).
func spawnSleeper(detached, ignoreTerm bool) int {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), fakeRoleEnv+"=sleeper")
	if ignoreTerm {
		cmd.Env = append(cmd.Env, "CURSORFAKE_SLEEPER_IGNORE_TERM=1")
	}
	cmd.Stdout = os.Stdout
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "fake: spawn:", err)
		return 0
	}
	pid := cmd.Process.Pid
	// Not waited for: the descendant outlives the fake on purpose.
	_ = cmd.Process.Release()
	return pid
}

// middleMain is the middle process of spawn-doublefork: it starts a
// detached sleeper and exits at once, so the sleeper is orphaned before any
// snapshot can link it to the fake.
func middleMain() int {
	_ = spawnSleeper(true, false)
	return 0
}
