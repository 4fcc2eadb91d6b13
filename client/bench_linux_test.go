package client

import (
	"context"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
)

// BenchmarkExec measures one Exec round trip in a session, in process and
// through the daemon's API over its Unix socket (the same Manager behind
// it), and the throwaway variant (session made and closed per call).
//
//	CORDON_TEST_INIT=$PWD/bin/cordon go test -run '^$' -bench Exec -benchtime 200x ./client
func BenchmarkExec(b *testing.B) {
	for _, via := range []string{"library", "daemon"} {
		for _, kind := range []string{"session", "throwaway"} {
			b.Run(via+"/"+kind, func(b *testing.B) {
				m := newManager(b)
				var svc sandbox.Service = m
				if via == "daemon" {
					c, _ := serve(b, m)
					svc = c
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				req := sandbox.ExecRequest{Argv: []string{"true"}}
				if kind == "session" {
					info, err := svc.CreateSession(ctx, sandbox.SessionSpec{})
					if err != nil {
						b.Fatal(err)
					}
					req.Session = info.ID
				}
				// One warm-up: the first exec pays for page cache and
				// connection set-up.
				if _, err := svc.Exec(ctx, req); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for b.Loop() {
					res, err := svc.Exec(ctx, req)
					if err != nil || res.ExitCode != 0 {
						b.Fatal(err, res.ExitCode)
					}
				}
			})
		}
	}
}

// BenchmarkHealth is the API's own floor: one request, no sandbox.
func BenchmarkHealth(b *testing.B) {
	c, _ := serve(b, newManager(b))
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Health(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
