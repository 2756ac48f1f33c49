package metrics_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/metrics"
)

func TestEndpointAnswersScrapesUntilClose(t *testing.T) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "seglog_test_gauge", Help: "a test gauge"})
	g.Set(7)
	e, err := metrics.Listen("127.0.0.1:0", g)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- e.Serve() }()

	resp, err := http.Get("http://" + e.Addr().String() + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "seglog_test_gauge 7\n")

	require.NoError(t, e.Close())
	select {
	case err := <-served:
		assert.NoError(t, err, "Serve returns nil after Close")
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	_, err = http.Get("http://" + e.Addr().String() + "/metrics")
	assert.Error(t, err, "the listener is closed")
}

func TestEndpointClosesWithoutServing(t *testing.T) {
	e, err := metrics.Listen("127.0.0.1:0")
	require.NoError(t, err)
	assert.NoError(t, e.Close())
}

func TestEndpointRefusesTwoCollectorsOfOneName(t *testing.T) {
	opts := prometheus.GaugeOpts{Name: "seglog_test_gauge", Help: "a test gauge"}
	_, err := metrics.Listen("127.0.0.1:0", prometheus.NewGauge(opts), prometheus.NewGauge(opts))
	assert.Error(t, err)
}

func TestEndpointReportsAnAddressInUse(t *testing.T) {
	e, err := metrics.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer e.Close()
	_, err = metrics.Listen(e.Addr().String())
	assert.Error(t, err)
}
