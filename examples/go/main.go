// Command boardline-go mutes telephone participants, reads a channel's mute
// state and watches its mute events over gRPC, and, as the telephone gateway,
// reports a caller joining the line. It is the start of a Go integration:
// context deadlines, a Bearer token per call, and each error handled as
// boardline's docs/errors.md says (see errors.go).
//
// Every step prints one JSON line on stdout.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	channelv1 "boardline.example/api/channel/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
)

const usage = `usage: boardline-go <command> [flags]
  mute  -uid U [-mute=false] [-passphrase P]   mute or unmute (BOARDLINE_TOKEN, host passphrase)
  state                                        the channel's mute state (BOARDLINE_GATEWAY_TOKEN)
  join  -uid U [-caller-id C] [-sequence N]    report a caller joining; whether to start them muted (BOARDLINE_GATEWAY_TOKEN)
  watch [-after CURSOR] [-count N]             the channel's mute events, resuming after a drop
environment: BOARDLINE_URL BOARDLINE_TOKEN BOARDLINE_GATEWAY_TOKEN BOARDLINE_CHANNEL BOARDLINE_HOST_PASSPHRASE`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	deadline := flags.Duration("deadline", 0, "give up after this long, retries included (default 30s; watch: never)")
	uid := flags.String("uid", "pstn-1001", "mute, join: the telephone participant")
	mute := flags.Bool("mute", true, "mute: true mutes, false unmutes")
	passphrase := flags.String("passphrase", os.Getenv("BOARDLINE_HOST_PASSPHRASE"), "mute: the host passphrase")
	callerID := flags.String("caller-id", "***1234", "join: the caller id, masked (at most 4 digits)")
	sequence := flags.Uint64("sequence", 0, "join: the gateway's order of this report (default: the clock in ns)")
	after := flags.String("after", "", "watch: resume after this cursor (default: a snapshot's as_of_event_id)")
	count := flags.Int("count", 0, "watch: stop after this many events (0: never)")
	_ = flags.Parse(os.Args[2:])

	if *deadline == 0 && os.Args[1] != "watch" {
		*deadline = 30 * time.Second
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if *deadline > 0 {
		ctx, cancel = context.WithTimeout(ctx, *deadline)
	}
	defer cancel()
	var err error
	switch os.Args[1] {
	case "mute":
		err = runMute(ctx, dial(env("BOARDLINE_TOKEN")), *uid, *passphrase, *mute)
	case "join":
		if *sequence == 0 {
			*sequence = uint64(time.Now().UnixNano())
		}
		err = runJoin(ctx, dial(env("BOARDLINE_GATEWAY_TOKEN")), env("BOARDLINE_CHANNEL"), *uid, *callerID, *sequence)
	case "state":
		_, err = runState(ctx, dial(env("BOARDLINE_GATEWAY_TOKEN")), env("BOARDLINE_CHANNEL"))
	case "watch":
		err = runWatch(ctx, dial(env("BOARDLINE_GATEWAY_TOKEN")), env("BOARDLINE_CHANNEL"), *after, *count)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var f *failure
	if errors.As(err, &f) {
		emit("error", f.fields())
		os.Exit(f.exitCode())
	}
	if err != nil {
		emit("error", map[string]any{"message": err.Error()})
		os.Exit(1)
	}
}

// dial opens a client connection to BOARDLINE_URL's host that sends the
// token with every call: TLS for https://, plaintext h2c for http:// (the
// demo). It connects lazily and reconnects by itself, backing off from 100 ms
// to 5 s.
func dial(token string) channelv1.PstnServiceClient {
	url := strings.TrimSuffix(env("BOARDLINE_URL"), "/")
	transport := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	if strings.HasPrefix(url, "http://") {
		transport = grpc.WithInsecure()
	}
	conn, err := grpc.Dial(strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://"),
		transport,
		grpc.WithPerRPCCredentials(bearer(token)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 2, Jitter: 0.2, MaxDelay: 5 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		emit("error", map[string]any{"message": err.Error()})
		os.Exit(1)
	}
	return channelv1.NewPstnServiceClient(conn)
}

// bearer is the token as per-RPC credentials: `authorization: Bearer …`.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false only so that the plaintext demo works;
// with TLS only, return true: grpc-go then never sends the token in clear.
func (bearer) RequireTransportSecurity() bool { return false }

func env(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "%s is not set (npm start in boardline prints the export lines)\n", name)
		os.Exit(2)
	}
	return v
}
