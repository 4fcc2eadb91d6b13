package runner

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// ConnectArg is the hidden first argument that makes the cordon binary a
// CONNECT client of the sandbox's proxy, for ssh's ProxyCommand (git over
// ssh in a filtered sandbox): cordon __cordon-connect HOST PORT.
const ConnectArg = "__cordon-connect"

// ConnectMain asks the proxy on the sandbox's loopback for a tunnel to
// HOST:PORT and joins it to stdin and stdout. A refusal is printed on
// stderr (the proxy's one line) and exits 1.
func ConnectMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cordon "+ConnectArg+" HOST PORT (an ssh ProxyCommand inside a --net filter sandbox)")
		return 2
	}
	if _, err := strconv.ParseUint(args[1], 10, 16); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: port %q: want a number\n", args[1])
		return 2
	}
	target := net.JoinHostPort(args[0], args[1])
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(proxyHTTPPortFromEnv()))))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: connecting to the sandbox's proxy: %v (is this a --net filter sandbox?)\n", err)
		return 1
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return 1
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: reading the proxy's answer: %v\n", err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(os.Stderr, "%s (HTTP %d)\n", strings.TrimSpace(string(body)), resp.StatusCode)
		return 1
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, os.Stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(os.Stdout, br)
	return 0
}

// proxyHTTPPortFromEnv is the proxy's HTTP port as ProxyEnv set it in
// http_proxy (the landlock tier's is ephemeral), else ProxyHTTPPort.
func proxyHTTPPortFromEnv() uint16 {
	u, err := url.Parse(os.Getenv("http_proxy"))
	if err != nil || u.Hostname() != "127.0.0.1" {
		return ProxyHTTPPort
	}
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || p == 0 {
		return ProxyHTTPPort
	}
	return uint16(p)
}
