package llm_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

func benchClient(b *testing.B, srv *llmtest.Server, concurrency int) *llm.Client {
	b.Setenv("LLMTEST_KEY", testKey)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency * 2
	tr.MaxIdleConns = concurrency * 4
	c, err := llm.New(llm.Config{Stage: "bench", BaseURL: srv.URL, APIKeyEnv: "LLMTEST_KEY",
		Params: llm.Params{Model: "fake-chat"}, Concurrency: concurrency},
		llm.Options{Logger: slog.New(slog.DiscardHandler), Accountant: llm.NewAccountant(llm.Prices{"fake-chat": {1, 2}}, 0),
			HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkChatOverhead measures one sequential chat call against the fake
// server with no latency, through llm.Client ("client") and as a bare
// HTTP POST of an equivalent body ("raw-http", the baseline). The client's
// overhead per request is the difference of the two us/op.
func BenchmarkChatOverhead(b *testing.B) {
	srv := llmtest.New(b, llmtest.WithKey(testKey), llmtest.WithoutRecording())
	b.Run("raw-http", func(b *testing.B) {
		body := []byte(`{"model":"fake-chat","messages":[{"role":"user","content":"q0"}],"stream":false}`)
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		for i := 0; i < b.N; i++ {
			req, _ := http.NewRequest("POST", srv.URL+"/chat/completions", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/req")
	})
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("client/stream=%v", stream), func(b *testing.B) {
			c := benchClient(b, srv, 4)
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				r := ask(fmt.Sprintf("q%d", i))
				r.Params.MaxTokens = 1 // no cache configured; vary nothing else
				if _, err := c.Chat(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/req")
		})
	}
}

// BenchmarkThroughputLatency100ms sends requests with concurrency 64 to a
// server answering after 100 ms; the ideal is 640 req/s. It reports req/s
// and the percentage of ideal.
func BenchmarkThroughputLatency100ms(b *testing.B) {
	const conc = 64
	srv := llmtest.New(b, llmtest.WithLatency(100*time.Millisecond), llmtest.WithoutRecording())
	c := benchClient(b, srv, conc)
	ctx := context.Background()
	const perOp = 1280 // two seconds of ideal work per iteration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		work := make(chan int)
		for w := 0; w < conc*2; w++ { // more callers than slots: the client's bound is what limits
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range work {
					if _, err := c.Chat(ctx, ask(fmt.Sprintf("%d-%d", i, j))); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for j := 0; j < perOp; j++ {
			work <- j
		}
		close(work)
		wg.Wait()
	}
	rps := float64(perOp*b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rps, "req/s")
	b.ReportMetric(100*rps/640, "%ideal")
}
