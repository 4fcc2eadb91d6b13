package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/client"
)

// State is what a probe concluded.
type State string

const (
	// Running: a daemon answered /v1/health.
	Running State = "running"
	// Unresponsive: a daemon is alive (it holds the lock, or its pid
	// exists where the lock cannot be checked) but did not answer: it is
	// starting, hung, or refuses this client.
	Unresponsive State = "unresponsive"
	// Stopped: no daemon; files left behind are stale.
	Stopped State = "stopped"
)

// Status is what a probe found.
type Status struct {
	State     State           `json:"state"`
	Paths     Paths           `json:"-"`
	Dir       string          `json:"dir"`
	Endpoint  client.Endpoint `json:"endpoint"`
	Discovery *Discovery      `json:"-"`
	Health    *api.Health     `json:"health,omitempty"`
	Pid       int             `json:"pid,omitempty"`
	// Reason says how the state was decided.
	Reason string `json:"reason"`
	// Stale: files of a dead daemon are left (they are removed by the next
	// daemon, under the lock).
	Stale bool `json:"stale,omitempty"`
	// Refused: a daemon answered and refused this client (401, 403).
	Refused error `json:"-"`
}

// prober decides liveness. Its fields are replaceable in tests.
type prober struct {
	kill     killFunc
	lockHeld func(path string) (bool, error)
	// timeout bounds the health call.
	timeout time.Duration
}

func newProber() prober {
	return prober{kill: syscall.Kill, lockHeld: lockHeld, timeout: 3 * time.Second}
}

// hostEndpoint reads CORDON_HOST (and CORDON_TOKEN); ok is false when it
// is unset.
func hostEndpoint() (ep client.Endpoint, ok bool, err error) {
	h := os.Getenv("CORDON_HOST")
	if h == "" {
		return ep, false, nil
	}
	ep, err = client.ParseHost(h)
	if err != nil {
		return ep, true, fmt.Errorf("CORDON_HOST: %w", err)
	}
	ep.Token = os.Getenv("CORDON_TOKEN")
	return ep, true, nil
}

// Probe decides whether the user's daemon is running: by connecting and
// calling health; failing that, by its lock; failing that, by its pid.
// CORDON_HOST, when set, names the endpoint to try.
func Probe(ctx context.Context, p Paths) (Status, error) {
	override, ok, err := hostEndpoint()
	if err != nil {
		return Status{}, err
	}
	var ov *client.Endpoint
	if ok {
		ov = &override
	}
	return newProber().probe(ctx, p, ov), nil
}

func (pr prober) probe(ctx context.Context, p Paths, override *client.Endpoint) Status {
	st := Status{Paths: p, Dir: p.Dir}
	disc, derr := ReadDiscovery(p.Discovery)
	if derr == nil {
		st.Discovery, st.Pid = &disc, disc.Pid
		st.Endpoint = disc.Endpoint()
	}
	switch {
	case override != nil:
		st.Endpoint = *override
		if st.Endpoint.Addr != "" && st.Endpoint.Token == "" && derr == nil && disc.Addr == st.Endpoint.Addr {
			st.Endpoint.Token = disc.Token
		}
	case derr != nil:
		st.Endpoint = client.Endpoint{}
	}
	var healthErr error
	if st.Endpoint.Socket != "" || st.Endpoint.Addr != "" {
		hctx, cancel := context.WithTimeout(ctx, pr.timeout)
		c := client.New(st.Endpoint)
		h, err := c.Health(hctx)
		c.Close()
		cancel()
		if err == nil {
			st.State, st.Health, st.Pid = Running, &h, h.Pid
			st.Reason = "answered /v1/health at " + st.Endpoint.String()
			return st
		}
		healthErr = err
		var ae *client.Error
		if errors.As(err, &ae) {
			// Something answered, and refused: alive, and not ours to use.
			st.State, st.Refused = Unresponsive, err
			st.Reason = fmt.Sprintf("%s answered but refused: %v", st.Endpoint, err)
			return st
		}
	}
	held, lerr := pr.lockHeld(p.Lock)
	switch {
	case lerr == nil && held:
		st.State = Unresponsive
		st.Reason = "a daemon holds " + p.Lock + " but does not answer (starting, or hung)"
	case lerr == nil:
		st.State = Stopped
		st.Reason = "no daemon holds " + p.Lock
		st.Stale = derr == nil
		if st.Stale {
			st.Reason += fmt.Sprintf("; daemon.json (pid %d) is stale", disc.Pid)
		}
	default:
		// The lock cannot be checked: the pid is all there is.
		alive, why := false, "no daemon.json"
		if derr == nil {
			alive, why = pidAlive(disc.Pid, disc.StartTime, pr.kill)
		}
		st.Reason = fmt.Sprintf("the lock cannot be checked (%v); %s", lerr, why)
		if alive {
			st.State = Unresponsive
		} else {
			st.State = Stopped
		}
	}
	if healthErr != nil {
		st.Reason += " (health: " + healthErr.Error() + ")"
	}
	return st
}
