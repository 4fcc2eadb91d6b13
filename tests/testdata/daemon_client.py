"""A full session lifecycle against the cordon daemon, with Python's standard
library only: what a Python agent harness would do.

    python3 daemon_client.py --socket PATH
    python3 daemon_client.py --addr 127.0.0.1:PORT --token TOKEN
"""

import argparse
import base64
import http.client
import json
import socket
import sys


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix socket; the Host header says localhost."""

    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.socket_path)
        self.sock = s


class Daemon:
    def __init__(self, socket_path=None, addr=None, token=None):
        self.socket_path, self.addr, self.token = socket_path, addr, token

    def conn(self):
        if self.socket_path:
            return UnixHTTPConnection(self.socket_path)
        host, port = self.addr.rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=60)

    def headers(self, extra=None):
        h = {}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def call(self, method, path, body=None, expect=(200,), raw=None):
        c = self.conn()
        headers = self.headers()
        data = raw
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        payload = r.read()
        c.close()
        if r.status not in expect:
            sys.exit(f"{method} {path}: HTTP {r.status}: {payload!r}")
        if r.status != 204:
            assert r.getheader("Content-Type", "").startswith("application/json"), r.getheader("Content-Type")
        return r.status, (json.loads(payload) if payload else None)

    def events(self, path, last_event_id=None):
        """Reads a server-sent event stream to its end."""
        c = self.conn()
        extra = {"Last-Event-ID": str(last_event_id)} if last_event_id is not None else {}
        c.request("GET", path, headers=self.headers(extra))
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        assert r.getheader("Content-Type") == "text/event-stream"
        out, cur = [], {}
        for line in r:
            line = line.decode().rstrip("\n")
            if line == "":
                if cur:
                    out.append(cur)
                    cur = {}
                continue
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            cur[key] = value[1:] if value.startswith(" ") else value
        c.close()
        return out


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket")
    ap.add_argument("--addr")
    ap.add_argument("--token")
    a = ap.parse_args()
    d = Daemon(a.socket, a.addr, a.token)

    _, h = d.call("GET", "/v1/health")
    check(h["pid"] > 0 and h["instance_id"], f"health {h}")

    _, s = d.call("POST", "/v1/sessions", {
        "name": "py", "carry": True, "net": "none",
        "policy": "rules:\n  - deny: git push\n    message: open a pull request instead\n",
        "env": {"PATH": "/usr/bin:/bin", "GREETING": "hi from python"},
    }, expect=(201,))
    sid = s["id"]
    _, ls = d.call("GET", "/v1/sessions")
    check([x["id"] for x in ls["sessions"]] == [sid], f"sessions {ls}")
    _, got = d.call("GET", "/v1/sessions/py")
    check(got["id"] == sid, "a session by name")

    # Carry mode: cd and export persist across execs.
    _, r = d.call("POST", "/v1/exec", {"session_id": sid, "script": "cd /tmp && export X=1 && echo $GREETING"})
    check(r["stdout"] == "hi from python\n" and r["exit_code"] == 0, f"exec {r}")
    _, r = d.call("POST", "/v1/exec", {"session_id": sid, "script": "echo $PWD $X", "cwd": ""})
    check(r["stdout"] == "/tmp 1\n", f"carried {r}")

    # A denial is a result: exit 126, the rule, the message.
    _, r = d.call("POST", "/v1/exec", {"session_id": sid, "argv": ["git", "push", "origin", "main"]})
    check(r["exit_code"] == 126 and r["denied"], f"denied {r}")
    check(r["decisions"][0]["rule"] == 'deny "git push": open a pull request instead', f"rule {r}")

    # Binary output, byte for byte; stdin as bytes.
    _, r = d.call("POST", "/v1/exec?encoding=base64", {
        "session_id": sid, "script": "printf '\\000\\377'; cat",
        "stdin_b64": base64.b64encode(b"\x01\x02").decode(),
    })
    check(base64.b64decode(r["stdout_b64"]) == b"\x00\xff\x01\x02", f"base64 {r}")
    check("stdout" not in r, "no text field in base64 mode")

    # A timeout ends the tree.
    _, r = d.call("POST", "/v1/exec", {"session_id": sid, "argv": ["sleep", "30"], "timeout_ms": 200, "kill_grace_ms": 500})
    check(r["timed_out"] and r["signal"] == 15, f"timeout {r}")

    # A started process with a stdin pipe.
    _, p = d.call("POST", "/v1/processes", {"session_id": sid, "script": "read line; echo got $line; exit 3", "stdin": "pipe"},
                  expect=(201,))
    pid = p["id"]
    d.call("POST", f"/v1/processes/{pid}/stdin", raw=b"hello\n", expect=(204,))
    d.call("POST", f"/v1/processes/{pid}/stdin?close=1", raw=b"", expect=(204,))
    _, w = d.call("POST", f"/v1/processes/{pid}/wait")
    check(w["exit_code"] == 3, f"wait {w}")
    evs = d.events(f"/v1/processes/{pid}/events")
    kinds = [e.get("event") for e in evs]
    check(kinds[-1] == "end" and kinds[-2] == "exit", f"events {kinds}")
    out = "".join(json.loads(e["data"]).get("text", "") for e in evs if e.get("event") == "stdout")
    check(out == "got hello\n", f"stdout {out!r}")
    first = int(evs[0]["id"])
    rest = d.events(f"/v1/processes/{pid}/events", last_event_id=first)
    check(len(rest) == len(evs) - 1, f"resume after {first}: {rest}")
    _, listed = d.call("GET", f"/v1/processes?session_id={sid}")
    check([x["id"] for x in listed["processes"]] == [pid], f"processes {listed}")

    # Signals reach the tree; kill returns the final status.
    _, q = d.call("POST", "/v1/processes", {"session_id": sid, "argv": ["sleep", "300"]}, expect=(201,))
    d.call("POST", f"/v1/processes/{q['id']}/signal", {"signal": "TERM", "scope": "tree"}, expect=(204,))
    _, w = d.call("POST", f"/v1/processes/{q['id']}/wait")
    check(w["signal"] == 15 and w["exit_code"] == 143, f"signalled {w}")
    _, k = d.call("POST", f"/v1/processes/{q['id']}/kill", {"grace_ms": 0})
    check(k["signal"] == 15 and not k["kill_requested"], f"a kill after the exit keeps the real status {k}")

    # The session's decisions, as a stream.
    dec = d.events(f"/v1/sessions/{sid}/decisions")
    argv = [json.loads(e["data"])["decision"]["argv"] for e in dec if e.get("event") == "decision"]
    check(["git", "push", "origin", "main"] in argv, f"decisions {argv}")

    # Errors are JSON with a code.
    _, e = d.call("GET", "/v1/processes/nope", expect=(404,))
    check(e["code"] == "not_found", f"{e}")
    _, e = d.call("POST", "/v1/exec", {"script": "true", "timeout": 5}, expect=(400,))
    check(e["code"] == "bad_request" and "timeout" in e["message"], f"{e}")
    _, e = d.call("POST", "/v1/sessions", {"name": "py"}, expect=(409,))
    check(e["code"] == "exists", f"{e}")

    d.call("DELETE", f"/v1/sessions/{sid}", expect=(204,))
    d.call("GET", f"/v1/sessions/{sid}", expect=(404,))
    _, e = d.call("GET", f"/v1/processes/{pid}", expect=(404,))
    print("PYTHON-CLIENT-OK")


if __name__ == "__main__":
    main()
