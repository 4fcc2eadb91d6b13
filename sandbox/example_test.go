//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
)

// These examples run real sandboxes: the binary that calls sandbox must
// dispatch runner.InitArg in its main (cordon's main and this package's
// TestMain do).

// A session, a command run to completion in it, and a command the policy
// refuses.
func Example() {
	dir, _ := os.MkdirTemp("", "cordon-example")
	defer os.RemoveAll(dir)
	m := sandbox.NewManager(sandbox.Options{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	defer m.Close(context.Background())

	ctx := context.Background()
	s, err := m.NewSession(ctx, sandbox.SessionSpec{
		Policy: "rules:\n  - deny: git push\n    message: open a pull request instead\n",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)

	// The sandbox has its own pid namespace: its pid 1 is bubblewrap.
	res, _ := s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"cat", "/proc/1/comm"}})
	fmt.Printf("%s", res.Stdout)

	res, _ = s.Exec(ctx, sandbox.ExecRequest{Argv: []string{"git", "push", "origin", "main"}})
	fmt.Println(res.ExitCode, res.Error)
	fmt.Println(res.Decisions[0].Rule)
	// Output:
	// bwrap
	// 126 git: denied by policy
	// deny "git push": open a pull request instead
}

// Start a process and stream its output and exit as events. Events resume
// from any cursor.
func ExampleSession_Start() {
	dir, _ := os.MkdirTemp("", "cordon-example")
	defer os.RemoveAll(dir)
	m := sandbox.NewManager(sandbox.Options{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	defer m.Close(context.Background())
	ctx := context.Background()
	s, err := m.NewSession(ctx, sandbox.SessionSpec{})
	if err != nil {
		fmt.Println(err)
		return
	}

	p, _ := s.Start(ctx, sandbox.StartRequest{Script: "for i in 1 2 3; do echo line $i; sleep 0.01; done; exit 4"})
	var cursor uint64
	for ev, err := range p.Events(ctx, cursor) {
		if err != nil {
			fmt.Println(err)
			return
		}
		cursor = ev.Seq // where a client reconnecting would resume
		switch ev.Kind {
		case sandbox.EventStdout:
			fmt.Printf("out: %s", ev.Data)
		case sandbox.EventExit:
			fmt.Println("exit code", ev.Exit.ExitCode)
		}
	}
	// Output:
	// out: line 1
	// out: line 2
	// out: line 3
	// exit code 4
}

// Kill a process's whole tree, including what it detached: SIGTERM, a
// grace period, then SIGKILL.
func ExampleProcess_Kill() {
	dir, _ := os.MkdirTemp("", "cordon-example")
	defer os.RemoveAll(dir)
	m := sandbox.NewManager(sandbox.Options{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	defer m.Close(context.Background())
	ctx := context.Background()
	s, err := m.NewSession(ctx, sandbox.SessionSpec{})
	if err != nil {
		fmt.Println(err)
		return
	}

	// A server that detaches a worker and ignores SIGTERM.
	p, _ := s.Start(ctx, sandbox.StartRequest{Script: "setsid -f sleep 600; trap '' TERM; echo up; sleep 600"})
	for ev := range p.Events(ctx, 0) {
		if ev.Kind == sandbox.EventStdout {
			break // it is up
		}
	}
	exit, _ := p.Kill(ctx, 200*time.Millisecond)
	fmt.Println("signal", exit.Signal, "kill requested", exit.KillRequested)
	// Output:
	// signal 9 kill requested true
}

// In carry mode, the working directory and exported variables a script
// leaves behind are the next Exec's.
func ExampleSessionSpec_carry() {
	dir, _ := os.MkdirTemp("", "cordon-example")
	defer os.RemoveAll(dir)
	m := sandbox.NewManager(sandbox.Options{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	defer m.Close(context.Background())
	ctx := context.Background()
	s, err := m.NewSession(ctx, sandbox.SessionSpec{Carry: true})
	if err != nil {
		fmt.Println(err)
		return
	}

	_, _ = s.Exec(ctx, sandbox.ExecRequest{Script: "mkdir -p /tmp/work && cd /tmp/work && export STAGE=build"})
	res, _ := s.Exec(ctx, sandbox.ExecRequest{Script: "echo $PWD $STAGE"})
	fmt.Printf("%s", res.Stdout)
	// Output:
	// /tmp/work build
}

// Without a session, Exec runs in a throwaway sandbox; a timeout ends the
// command's tree.
func ExampleManager_Exec() {
	dir, _ := os.MkdirTemp("", "cordon-example")
	defer os.RemoveAll(dir)
	m := sandbox.NewManager(sandbox.Options{Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	defer m.Close(context.Background())

	res, err := m.Exec(context.Background(), sandbox.ExecRequest{
		Script:    "echo started; sleep 600",
		Timeout:   sandbox.Duration(200 * time.Millisecond),
		KillGrace: sandbox.Duration(time.Second),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%stimed out %v, signal %d, shell code %d\n", res.Stdout, res.TimedOut, res.Signal, res.ShellCode())
	// Output:
	// started
	// timed out true, signal 15, shell code 124
}
