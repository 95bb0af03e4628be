package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	channelv1 "boardline.example/api/channel/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// emit prints one JSON line: {"step": step, …fields}.
func emit(step string, fields map[string]any) {
	line := map[string]any{"step": step}
	for k, v := range fields {
		line[k] = v
	}
	_ = json.NewEncoder(os.Stdout).Encode(line)
}

func runMute(ctx context.Context, c channelv1.PstnServiceClient, uid, passphrase string, mute bool) error {
	var res *channelv1.MuteResponse
	err := call(ctx, "Mute", func(ctx context.Context) (err error) {
		res, err = c.Mute(ctx, &channelv1.MuteRequest{Uid: uid, Passphrase: passphrase, Mute: proto.Bool(mute)})
		return err
	})
	if err == nil {
		emit("mute", map[string]any{"uid": res.GetUid(), "mute": res.GetMute()})
	}
	return err
}

// runJoin is the gateway reporting that a caller joined the line, and acting
// on the answer. The sequence is chosen once, before the first attempt: a
// retry of a report that did land answers DUPLICATE with the same state.
func runJoin(ctx context.Context, c channelv1.PstnServiceClient, channel, uid, callerID string, sequence uint64) error {
	var res *channelv1.ReportLineResponse
	err := call(ctx, "ReportLine", func(ctx context.Context) (err error) {
		res, err = c.ReportLine(ctx, &channelv1.ReportLineRequest{
			ChannelId: channel,
			Uid:       uid,
			Sequence:  sequence,
			Change:    &channelv1.ReportLineRequest_Join{Join: &channelv1.LineJoin{CallerId: callerID}},
		})
		return err
	})
	if err != nil {
		return err
	}
	// What the bridge does with the caller: docs/pstn-line.md, "Outcomes".
	action := "admit"
	switch res.GetOutcome() {
	case channelv1.LineOutcome_LINE_OUTCOME_STALE:
		action = "ignore" // a newer report of this caller (their leave) was applied first
	case channelv1.LineOutcome_LINE_OUTCOME_LINE_FULL:
		action = "refuse" // tell the caller `reason`
	}
	emit("join", map[string]any{
		"uid": uid, "sequence": sequence, "outcome": res.GetOutcome().String(), "action": action,
		"start_muted": res.GetParticipant().GetMute(), "on_line": res.GetParticipant().GetOnLine(),
		"reason": res.GetReason(),
	})
	return nil
}

// runState reads the channel's state by its id (a pstn.gateway token).
func runState(ctx context.Context, c channelv1.PstnServiceClient, channel string) (*channelv1.PstnState, error) {
	var res *channelv1.PstnState
	err := call(ctx, "GetPstnState", func(ctx context.Context) (err error) {
		res, err = c.GetPstnState(ctx, &channelv1.GetPstnStateRequest{
			Channel: &channelv1.GetPstnStateRequest_ChannelId{ChannelId: channel},
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	muted := map[string]bool{}
	for _, p := range res.GetParticipants() {
		muted[p.GetUid()] = p.GetMute()
	}
	emit("state", map[string]any{"channel_id": res.GetChannelId(), "muted": muted, "as_of_event_id": res.GetAsOfEventId()})
	return res, nil
}

// runWatch prints the channel's mute events. Without a cursor it starts from
// a snapshot (GetPstnState), so nothing falls between the two. When the
// stream ends or breaks, it reconnects with back-off and resumes after the
// cursor of the last event printed; when that cursor's events were trimmed
// away (OUT_OF_RANGE), it takes a new snapshot.
func runWatch(ctx context.Context, c channelv1.PstnServiceClient, channel, cursor string, count int) error {
	var wait retryWait
	printed := 0
	for n := 1; ; n++ {
		if cursor == "" {
			state, err := runState(ctx, c, channel)
			if err != nil {
				return err
			}
			cursor = state.GetAsOfEventId()
		}
		err := watchOnce(ctx, c, channel, &cursor, &printed, count, &wait)
		if err == nil {
			return nil
		}
		a := read(err)
		if err == io.EOF {
			a = answer{code: codes.Unavailable, message: "the watch ended"}
		}
		if a.code == codes.OutOfRange {
			emit("snapshot", map[string]any{"reason": a.message})
			cursor = ""
			continue
		}
		delay, f := decide(a, &wait)
		if f != nil {
			return f
		}
		if err := sleep(ctx, "WatchPstnEvents", n, a, delay); err != nil {
			return err
		}
	}
}

// watchOnce is one stream, from *cursor on; nil once count events are printed.
func watchOnce(ctx context.Context, c channelv1.PstnServiceClient, channel string, cursor *string,
	printed *int, count int, wait *retryWait,
) error {
	// No per-call deadline: a watch is meant to stay open. Canceling ctx ends it.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.WatchPstnEvents(sctx, &channelv1.WatchPstnEventsRequest{ChannelIds: []string{channel}, After: *cursor})
	if err != nil {
		return err
	}
	emit("watching", map[string]any{"channel_id": channel, "after": *cursor})
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		wait.reset() // a working stream starts the back-off over
		emit("event", map[string]any{
			"event_id": ev.GetEventId(), "cursor": ev.GetCursor(), "uid": ev.GetUid(), "mute": ev.GetMute(),
			"by": ev.GetBy(), "at": ev.GetAt().AsTime().Format(time.RFC3339Nano),
		})
		*cursor = ev.GetCursor()
		if *printed++; count > 0 && *printed >= count {
			return nil
		}
	}
}
