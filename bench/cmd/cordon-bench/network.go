package main

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// networkResult is section g: what cordon's proxy (--net filter) adds to a
// request and to a download, against the same curl inside cordon with the
// host's network (direct), alternating round by round.
type networkResult struct {
	Requests int `json:"requests_per_round"`
	Rounds   int `json:"rounds"`
	// LatencyMS: one HTTPS request (a new curl each time, TLS through a
	// CONNECT tunnel when proxied), curl's time_total.
	DirectMS  dist   `json:"https_direct_ms"`
	ProxiedMS dist   `json:"https_proxied_ms"`
	Latency   *ratio `json:"https_latency_ratio"`
	// Throughput of a 100 MB download (MB/s, curl's speed_download):
	// plain HTTP through the HTTP proxy, and through SOCKS5 (a spliced
	// tunnel), against direct.
	DownloadMB   int    `json:"download_mb"`
	DirectMBs    dist   `json:"direct_mb_s"`
	HTTPMBs      dist   `json:"http_proxy_mb_s"`
	ConnectMBs   dist   `json:"connect_mb_s"`
	SOCKSMBs     dist   `json:"socks_mb_s"`
	HTTPRatio    *ratio `json:"http_proxy_throughput_ratio"`
	ConnectRatio *ratio `json:"connect_throughput_ratio"`
	SOCKSRatio   *ratio `json:"socks_throughput_ratio"`
	CurlVersion  string `json:"curl"`
	ServerRemark string `json:"server"`
}

// network measures section g with servers on the host's loopback started
// here: a small HTTPS answer and a 100 MB HTTP body.
func (h *harness) network(res *results) error {
	if _, err := exec.LookPath("curl"); err != nil {
		h.logf("network: curl not installed: skipped")
		return nil
	}
	const mb = 100
	body := bytes.Repeat([]byte{'x'}, 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/100mb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(mb<<20))
		for i := 0; i < mb; i++ {
			if _, err := w.Write(body); err != nil {
				return
			}
		}
	})
	tlsSrv := httptest.NewUnstartedServer(mux)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // curl's closes are not news
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(mux)
	defer plain.Close()
	ca := filepath.Join(h.tmp, "bench-ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644); err != nil {
		return err
	}
	tlsHost := strings.TrimPrefix(tlsSrv.URL, "https://")
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	requests, rounds := 20, h.cfg.Rounds
	if h.cfg.Quick {
		requests = 5
	}
	r := &networkResult{Requests: requests, Rounds: rounds, DownloadMB: mb,
		CurlVersion: firstLine("curl", "--version"), ServerRemark: "Go net/http on the host's loopback"}

	// run runs script in cordon (filtered or with the host's network) and
	// returns the numbers it printed, one per line.
	run := func(filtered bool, script string) ([]float64, error) {
		// The CA file is in the harness's temporary directory, under /tmp,
		// which the sandbox replaces with its own.
		args := []string{h.cordon, "--policy", h.policy, "--ro", h.tmp}
		if filtered {
			args = append(args, "--allow-net", tlsHost, "--allow-net", plainHost)
		} else {
			args = append(args, "--net", "host")
		}
		args = append(args, "--", "sh", "-c", "unset no_proxy NO_PROXY; "+script)
		cmd := exec.CommandContext(h.ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "http_proxy=", "https_proxy=", "all_proxy=", "HTTP_PROXY=", "HTTPS_PROXY=", "ALL_PROXY=")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%v: %v: %s", args, err, tail(stderr.String(), 400))
		}
		var xs []float64
		for _, f := range strings.Fields(out.String()) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("curl printed %q", f)
			}
			xs = append(xs, x)
		}
		return xs, nil
	}
	latency := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do curl -sS -o /dev/null --cacert %s -w '%%{time_total}\n' https://%s/small || exit 1; i=$((i+1)); done`,
		requests, ca, tlsHost)
	download := func(how string) string {
		return fmt.Sprintf(`curl -sS -o /dev/null %s -w '%%{speed_download}\n' http://%s/100mb`, how, plainHost)
	}
	var dLat, pLat, dRound, pRound []float64
	var dDown, hDown, cDown, sDown []float64
	for i := 0; i < rounds; i++ {
		// Alternate which goes first, as every section does.
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, filtered := range order {
			xs, err := run(filtered, latency)
			if err != nil {
				return err
			}
			for j := range xs {
				xs[j] *= 1000
			}
			if filtered {
				pLat, pRound = append(pLat, xs...), append(pRound, median(xs))
			} else {
				dLat, dRound = append(dLat, xs...), append(dRound, median(xs))
			}
		}
		d, err := run(false, download("--noproxy '*'"))
		if err != nil {
			return err
		}
		hp, err := run(true, download(""))
		if err != nil {
			return err
		}
		cp, err := run(true, download("--proxytunnel"))
		if err != nil {
			return err
		}
		sp, err := run(true, download("--socks5-hostname 127.0.0.1:1080"))
		if err != nil {
			return err
		}
		dDown, hDown, cDown, sDown = append(dDown, d[0]/1e6), append(hDown, hp[0]/1e6), append(cDown, cp[0]/1e6), append(sDown, sp[0]/1e6)
		h.logf("network round %d: https %.2f vs %.2f ms; 100 MB direct %.0f, http proxy %.0f, connect %.0f, socks %.0f MB/s",
			i+1, median(pRound[len(pRound)-1:]), median(dRound[len(dRound)-1:]), dDown[i], hDown[i], cDown[i], sDown[i])
	}
	r.DirectMS, r.ProxiedMS = summarize(dLat), summarize(pLat)
	r.Latency = newRatio("proxied", "direct", "https_ms", pRound, dRound)
	r.DirectMBs, r.HTTPMBs, r.ConnectMBs, r.SOCKSMBs = summarize(dDown), summarize(hDown), summarize(cDown), summarize(sDown)
	r.HTTPRatio = newRatio("http-proxy", "direct", "mb_s", hDown, dDown)
	r.ConnectRatio = newRatio("connect", "direct", "mb_s", cDown, dDown)
	r.SOCKSRatio = newRatio("socks", "direct", "mb_s", sDown, dDown)
	res.Network = r
	return nil
}

// printNetwork writes section g.
func printNetwork(b *bytes.Buffer, n *networkResult) {
	if n == nil {
		return
	}
	fmt.Fprintf(b, "### g: network, --net filter (cordon's proxy) vs cordon --net host (direct); %d rounds, %s\n\n", n.Rounds, n.CurlVersion)
	fmt.Fprintf(b, "| | direct | through the proxy | ratio (median of rounds, IQR) |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(b, "| one HTTPS request, new curl each (ms, %d per round) | %.2f | %.2f | **%.2f** (%.2f-%.2f); added %.2f ms |\n",
		n.Requests, n.DirectMS.Median, n.ProxiedMS.Median, n.Latency.Median, n.Latency.Q1, n.Latency.Q3, n.ProxiedMS.Median-n.DirectMS.Median)
	fmt.Fprintf(b, "| %d MB download, plain HTTP proxy (MB/s) | %.0f | %.0f | **%.2f** (%.2f-%.2f) |\n",
		n.DownloadMB, n.DirectMBs.Median, n.HTTPMBs.Median, n.HTTPRatio.Median, n.HTTPRatio.Q1, n.HTTPRatio.Q3)
	fmt.Fprintf(b, "| %d MB download, CONNECT tunnel (MB/s) | %.0f | %.0f | **%.2f** (%.2f-%.2f) |\n",
		n.DownloadMB, n.DirectMBs.Median, n.ConnectMBs.Median, n.ConnectRatio.Median, n.ConnectRatio.Q1, n.ConnectRatio.Q3)
	fmt.Fprintf(b, "| %d MB download, SOCKS5 tunnel (MB/s) | %.0f | %.0f | **%.2f** (%.2f-%.2f) |\n\n",
		n.DownloadMB, n.DirectMBs.Median, n.SOCKSMBs.Median, n.SOCKSRatio.Median, n.SOCKSRatio.Q1, n.SOCKSRatio.Q3)
}
