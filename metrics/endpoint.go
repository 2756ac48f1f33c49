package metrics

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Endpoint answers Prometheus's scrapes over HTTP with what its collectors
// collect, in the text format, at any path (http://ADDR/metrics): the
// scrape target of a process that serves a data directory (seglog serve
// --metrics).
type Endpoint struct {
	ln  net.Listener
	srv *http.Server
}

// Listen listens on addr (host:port; port 0: any free port) for scrapes
// of cs, registered in a registry of the endpoint's own: two collectors
// with one metric name are an error. Serve answers them.
func Listen(addr string, cs ...prometheus.Collector) (*Endpoint, error) {
	reg := prometheus.NewRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return &Endpoint{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() net.Addr { return e.ln.Addr() }

// Serve answers scrapes until Close, then returns nil; any other error
// stops it.
func (e *Endpoint) Serve() error {
	if err := e.srv.Serve(e.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close closes the listener and every connection at once (a scrape in
// progress gets no answer) and waits for nothing; Serve returns.
func (e *Endpoint) Close() error {
	err := e.srv.Close()
	if cerr := e.ln.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	return err
}
