// threaded.go GIT MODE: a Go program whose goroutines spin on several OS
// threads while it execs. os/exec starts children with clone(CLONE_VFORK|
// CLONE_VM): the child shares the memory of a process whose other threads
// keep running.
//
//	MODE command:             exec.Command of "GIT status" (allowed) and
//	                          "GIT push" (denied), also from 8 goroutines at once
//	MODE exec-status/-push:   syscall.Exec from a goroutine locked to a thread
//	                          that is not the leader
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	git, mode := os.Args[1], os.Args[2]
	runtime.LockOSThread() // keep main on the leader thread
	var stop atomic.Bool
	for range 4 {
		go func() {
			runtime.LockOSThread()
			for !stop.Load() {
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)

	allowed := func() bool {
		out, err := exec.Command(git, "status").Output()
		return err == nil && string(out) == "git ran: status\n"
	}
	denied := func() bool {
		out, err := exec.Command(git, "push").Output()
		if err == nil {
			fmt.Printf("denied ran: %s", out)
		}
		return errors.Is(err, syscall.EPERM)
	}

	if rest, ok := strings.CutPrefix(mode, "exec-"); ok {
		go func() {
			runtime.LockOSThread() // main holds the leader: this is another thread
			err := syscall.Exec(git, []string{"git", rest}, os.Environ())
			fmt.Printf("goroutine exec: %v\n", err)
			os.Exit(126)
		}()
		time.Sleep(10 * time.Second)
		fmt.Println("exec did not happen")
		os.Exit(3)
	}

	var ok, refused int
	for range 10 {
		if allowed() {
			ok++
		}
		if denied() {
			refused++
		}
	}
	fmt.Printf("allowed ok=%d/10\ndenied refused=%d/10\n", ok, refused)

	var cok, crefused atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if allowed() {
					cok.Add(1)
				}
				if denied() {
					crefused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("concurrent allowed ok=%d/40 refused=%d/40\n", cok.Load(), crefused.Load())
	stop.Store(true)
}
