package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/service"
)

// instanceLen is the length of an instance id: 8 hex digits.
const instanceLen = 8

// NewInstanceID returns a random instance id.
func NewInstanceID() string {
	var b [instanceLen / 2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrStale marks an id handed out by a previous daemon instance.
var ErrStale = errors.New("stale id: from a previous daemon instance")

// StaleError names the stale id.
type StaleError struct {
	Kind, ID, Instance, Current string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale: %s %s is from a previous daemon instance (%s; this daemon is %s), and its sandbox is gone",
		e.Kind, e.ID, e.Instance, e.Current)
}

func (e *StaleError) Unwrap() error { return ErrStale }

// ids maps the library's ids to the API's and back. The library's are
// unique per Manager (sessions) or per session (processes); the API's are
// unique across daemon restarts:
//
//	session: LIBSESSION.INSTANCE          s-0123456789abcdef.1a2b3c4d
//	process: LIBPROCESS.LIBSESSION.INSTANCE
//
// Library ids never contain ".".
type ids struct{ inst string }

func (x ids) session(lib string) string {
	if lib == "" {
		return ""
	}
	return lib + "." + x.inst
}

func (x ids) process(libSession, libProcess string) string {
	if libProcess == "" {
		return ""
	}
	return libProcess + "." + libSession + "." + x.inst
}

func isInstance(s string) bool {
	if len(s) != instanceLen {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// parseSession reads an API session id. ok is false when ref does not
// have an id's form (it may be a session's name).
func (x ids) parseSession(ref string) (lib string, ok bool, err error) {
	parts := strings.Split(ref, ".")
	if len(parts) != 2 || parts[0] == "" || !isInstance(parts[1]) {
		return "", false, nil
	}
	if parts[1] != x.inst {
		return "", true, &StaleError{Kind: "session", ID: ref, Instance: parts[1], Current: x.inst}
	}
	return parts[0], true, nil
}

// parseProcess reads an API process id.
func (x ids) parseProcess(ref string) (libSession, libProcess string, err error) {
	parts := strings.Split(ref, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || !isInstance(parts[2]) {
		return "", "", fmt.Errorf("process %q: %w", ref, service.ErrNotFound)
	}
	if parts[2] != x.inst {
		return "", "", &StaleError{Kind: "process", ID: ref, Instance: parts[2], Current: x.inst}
	}
	return parts[1], parts[0], nil
}

func (x ids) sessionInfo(info service.SessionInfo) service.SessionInfo {
	info.ID = x.session(info.ID)
	return info
}

func (x ids) processInfo(p service.ProcessInfo) service.ProcessInfo {
	p.ID = x.process(p.Session, p.ID)
	p.Session = x.session(p.Session)
	return p
}

func (x ids) decisions(libSession string, ds []service.ExecDecision) []service.ExecDecision {
	out := make([]service.ExecDecision, len(ds))
	for i, d := range ds {
		d.Process = x.process(libSession, d.Process)
		out[i] = d
	}
	return out
}
