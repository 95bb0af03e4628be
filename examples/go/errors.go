package main

import (
	"context"
	"math/rand"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// perCall bounds each attempt; the command's context bounds all of them.
const perCall = 5 * time.Second

// answer is what a failed call said: the gRPC code, and from the
// google.rpc.ErrorInfo detail boardline's numeric code and retry_after_seconds.
type answer struct {
	code       codes.Code
	message    string
	numeric    int           // ErrorInfo metadata "code" (401, 429, 503, …); 0 when absent
	retryAfter time.Duration // ErrorInfo metadata "retry_after_seconds"; 0 when absent
}

func read(err error) answer {
	s, _ := status.FromError(err) // a non-status error reads as codes.Unknown
	a := answer{code: s.Code(), message: s.Message()}
	for _, d := range s.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != "boardline" {
			continue
		}
		a.numeric, _ = strconv.Atoi(info.GetMetadata()["code"])
		if secs, err := strconv.ParseFloat(info.GetMetadata()["retry_after_seconds"], 64); err == nil {
			a.retryAfter = time.Duration(secs * float64(time.Second))
		}
	}
	return a
}

// failure is an answer the program gives up on, with what to do about it.
type failure struct {
	answer
	advice string
}

func (f *failure) Error() string { return f.code.String() + ": " + f.message }

func (f *failure) fields() map[string]any {
	return map[string]any{"code": f.code.String(), "numeric_code": f.numeric, "message": f.message, "advice": f.advice}
}

func (f *failure) exitCode() int {
	switch f.code {
	case codes.Unauthenticated:
		return 3
	case codes.PermissionDenied:
		return 4
	}
	return 1
}

// retryWait doubles from 100 ms to 5 s, each wait jittered by ±20 %.
type retryWait struct{ next time.Duration }

func (b *retryWait) wait() time.Duration {
	if b.next == 0 {
		b.next = 100 * time.Millisecond
	}
	d := jitter(b.next, b.next/5)
	if b.next *= 2; b.next > 5*time.Second {
		b.next = 5 * time.Second
	}
	return d
}

func (b *retryWait) reset() { b.next = 0 }

func jitter(d, spread time.Duration) time.Duration {
	return d - spread + time.Duration(rand.Int63n(int64(2*spread)+1))
}

// decide says how long to wait before trying again, or the failure to give
// up with: docs/errors.md, "What a caller does with each error".
func decide(a answer, b *retryWait) (time.Duration, *failure) {
	switch {
	case a.code == codes.Unauthenticated:
		return 0, &failure{a, "get a fresh token; retrying this one never helps"}
	case a.code == codes.PermissionDenied:
		return 0, &failure{a, "not retried: the passphrase or the token's scope does not allow this"}
	case a.code == codes.ResourceExhausted && a.retryAfter > 0:
		return a.retryAfter + jitter(250*time.Millisecond, 250*time.Millisecond), nil
	case a.code == codes.ResourceExhausted:
		return 0, &failure{a, "the request is too big (too many channels in one watch): split it"}
	case a.code == codes.Unavailable || a.code == codes.DeadlineExceeded:
		return b.wait(), nil
	}
	return 0, &failure{a, "fix the request: sent again unchanged it fails the same way"}
}

// call runs one unary call with a deadline per attempt, retrying as decide
// says until ctx ends. A Mute sets a state and a report carries its sequence,
// so repeating either is safe.
func call(ctx context.Context, name string, attempt func(context.Context) error) error {
	var b retryWait
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, perCall)
		err := attempt(actx)
		cancel()
		if err == nil {
			return nil
		}
		a := read(err)
		wait, f := decide(a, &b)
		if f != nil {
			return f
		}
		if err := sleep(ctx, name, n, a, wait); err != nil {
			return err
		}
	}
}

// sleep prints the retry it waits for; it fails once ctx would end first.
func sleep(ctx context.Context, name string, attempt int, a answer, wait time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return &failure{a, "gave up: the next retry would pass the deadline"}
	}
	emit("retry", map[string]any{
		"call": name, "attempt": attempt, "code": a.code.String(), "numeric_code": a.numeric,
		"retry_after_seconds": a.retryAfter.Seconds(), "wait_ms": wait.Milliseconds(),
	})
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return &failure{a, "gave up: the deadline passed"}
	}
}
