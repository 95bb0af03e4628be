"""Prints a boardline channel's telephone line: who is on it, their state, and the policy.

GetPstnState by channel id, as the telephone gateway reads it (a token with the
scope pstn.gateway), retried as retry_policy says. Reads BOARDLINE_URL,
BOARDLINE_GATEWAY_TOKEN and BOARDLINE_CHANNEL. Prints one JSON line per
participant, then the roster's summary; exits 0, or 1 when the call fails.
"""

import argparse
import os
import sys
import time
from urllib.parse import urlsplit

import grpc
from convert import CALL_TIMEOUT_SECONDS, GaveUp, say, with_retries  # importing it puts gen/ on the path

from channel.v1 import pstn_pb2, pstn_pb2_grpc  # noqa: E402 (from gen/)


def participant_line(p):
    """One participant as printed: enum values by name, times as RFC 3339, absent ones as None."""
    return {
        "uid": p.uid,
        "on_line": p.on_line,
        "mute": p.mute,
        "setter": pstn_pb2.PstnSetter.Name(p.setter),
        "caller_id": p.caller_id,
        "joined_at": p.joined_at.ToJsonString() if p.HasField("joined_at") else None,
        "hand_raised": p.hand_raised,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds for everything, retries included")
    args = parser.parse_args()
    missing = [v for v in ("BOARDLINE_URL", "BOARDLINE_GATEWAY_TOKEN", "BOARDLINE_CHANNEL") if not os.environ.get(v)]
    if missing:
        print(f"set {', '.join(missing)} (npm start in boardline prints them)", file=sys.stderr)
        return 2

    target = urlsplit(os.environ["BOARDLINE_URL"]).netloc
    auth = (("authorization", f"Bearer {os.environ['BOARDLINE_GATEWAY_TOKEN']}"),)
    request = pstn_pb2.GetPstnStateRequest(channel_id=os.environ["BOARDLINE_CHANNEL"])
    deadline = time.monotonic() + args.deadline
    with grpc.insecure_channel(target) as channel:
        stub = pstn_pb2_grpc.PstnServiceStub(channel)

        # Reading changes nothing, so every retry the policy allows is safe.
        def call(attempt):
            say("call", method="GetPstnState", attempt=attempt)
            return stub.GetPstnState(request, metadata=auth, timeout=CALL_TIMEOUT_SECONDS)

        try:
            state = with_retries("GetPstnState", call, deadline)
        except GaveUp:
            return 1
    for p in state.participants:
        say("participant", **participant_line(p))
    say(
        "roster",
        channel_id=state.channel_id,
        on_line=sum(1 for p in state.participants if p.on_line),
        hands_raised=sum(1 for p in state.participants if p.hand_raised),
        mute_on_join=state.policy.mute_on_join,
        allow_self_unmute=state.policy.allow_self_unmute,
        as_of_event_id=state.as_of_event_id,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
