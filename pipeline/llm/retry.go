package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ErrEmptyResponse means the endpoint answered 200 without any choice (or
// without the embeddings asked for). It is retried like a transient failure.
var ErrEmptyResponse = errors.New("llm: endpoint returned no choices")

// verdict is how a failed attempt is handled.
type verdict struct {
	retry   bool    // worth another attempt
	breaker outcome // what it says about the endpoint
	status  int     // HTTP status, 0 if none
}

// classify decides whether err (from an attempt whose own deadline is
// attemptCtx's) is transient. parent is the caller's context: once it is
// done nothing is retried.
func classify(parent context.Context, err error) verdict {
	if parent.Err() != nil {
		return verdict{retry: false, breaker: unknown}
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	status := 0
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	if status != 0 {
		switch {
		case status == http.StatusTooManyRequests:
			// Throttled: the endpoint is up, so this must not open the circuit.
			return verdict{retry: true, breaker: endpointUp, status: status}
		case status == http.StatusRequestTimeout, status >= 500:
			return verdict{retry: true, breaker: endpointDown, status: status}
		default:
			return verdict{retry: false, breaker: endpointUp, status: status}
		}
	}
	var netErr net.Error
	var synErr *json.SyntaxError
	switch {
	case errors.Is(err, ErrEmptyResponse):
		return verdict{retry: true, breaker: endpointUp}
	case errors.Is(err, context.DeadlineExceeded), // the attempt's own timeout
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.As(err, &netErr):
		return verdict{retry: true, breaker: endpointDown}
	case errors.As(err, &synErr):
		// A body cut short mid-JSON: a transport problem, not a bad request.
		return verdict{retry: true, breaker: endpointDown}
	}
	return verdict{retry: false, breaker: unknown}
}

// backoff returns the full-jitter wait before retry number n (0-based):
// uniform in [0, min(max, base*2^n)).
func backoff(n int, base, maxWait time.Duration) time.Duration {
	ceil := maxWait
	if n < 30 {
		if d := base << n; d > 0 && d < maxWait {
			ceil = d
		}
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

// hint carries what the HTTP layer saw of one attempt's response back to the
// retry loop; go-openai's errors do not expose response headers.
type hint struct {
	retryAfter time.Duration
	has        bool
}

type hintKey struct{}

// hintingDoer records Retry-After (and OpenAI's retry-after-ms) into the
// attempt's hint.
type hintingDoer struct{ c *http.Client }

func (d hintingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if resp != nil && resp.StatusCode >= 400 {
		if h, ok := req.Context().Value(hintKey{}).(*hint); ok {
			if ms, err := strconv.ParseFloat(resp.Header.Get("retry-after-ms"), 64); err == nil && ms >= 0 {
				h.retryAfter, h.has = time.Duration(ms*float64(time.Millisecond)), true
			} else if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				h.retryAfter, h.has = ra, true
			}
		}
	}
	return resp, err
}
