"""Converts a document for a boardline channel's whiteboard and prints its pages.

ConvertFile with an idempotency key made once for this conversion (a retry
sends the same key, so the conversion starts at most once), then
WatchConversion until the task ends. Reads BOARDLINE_URL, BOARDLINE_TOKEN and
BOARDLINE_ATTENDEE_PASSPHRASE (BOARDLINE_HOST_PASSPHRASE with --role host).
Prints one JSON line per step; exits 0 once the pages are printed, 1 otherwise.
"""

import argparse
import json
import os
import sys
import time
import uuid
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

import grpc  # noqa: E402
from retry_policy import backoff_seconds, error_info, verdict  # noqa: E402
from whiteboard.v1 import whiteboard_pb2, whiteboard_pb2_grpc  # noqa: E402

CALL_TIMEOUT_SECONDS = 10.0
ENDED = ("Finished", "Fail", "Abort")


class GaveUp(Exception):
    """A call failed in a way retrying does not fix (already reported)."""


def say(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)


def with_retries(method, call, deadline):
    """call(attempt) until it answers, retrying as retry_policy says, within deadline (time.monotonic())."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(attempt)
        except grpc.RpcError as err:
            decided = verdict(err, attempt)
            info = error_info(err)
            fields = {
                "method": method,
                "attempt": attempt,
                "code": err.code().name,
                "message": err.details(),
                "error_code": info.metadata.get("code") if info else None,
                "retry_after_seconds": info.metadata.get("retry_after_seconds") if info else None,
            }
            if not decided.retry or time.monotonic() + decided.wait_seconds > deadline:
                say("failed", **fields, advice=decided.advice or "out of time: try again later")
                raise GaveUp() from err
            say("retry", **fields, wait_seconds=round(decided.wait_seconds, 3))
            time.sleep(decided.wait_seconds)


def convert(stub, auth, request, deadline):
    """ConvertFile, retried with one idempotency key."""
    key = str(uuid.uuid4())

    def call(attempt):
        say("call", method="ConvertFile", attempt=attempt, idempotency_key=key)
        return stub.ConvertFile(request, metadata=auth + (("idempotency-key", key),), timeout=CALL_TIMEOUT_SECONDS)

    answer = with_retries("ConvertFile", call, deadline)
    # Queued at once: boardline submits it to the conversion backend at the project's pace. An identical
    # request (same document, type and scale) gets the task already there: reused.
    say(
        "accepted",
        task_uuid=answer.task_uuid,
        status=answer.status,
        reused=answer.reused,
        queue_position=answer.queue_position,
        idempotency_key=key,
    )
    return answer.task_uuid


def watch_to_end(stub, auth, task_uuid, deadline):
    """The task's last state from WatchConversion, reconnecting whenever the stream ends early.

    A watch answers the current state first, so a new watch misses nothing."""
    request = whiteboard_pb2.WatchConversionRequest(task_uuid=task_uuid)

    def watch(attempt):
        last = None
        for conversion in stub.WatchConversion(request, metadata=auth, timeout=deadline - time.monotonic()):
            say("progress", status=conversion.status, progress_percent=conversion.progress_percent)
            last = conversion
        return last

    reconnects = 0
    while True:
        last = with_retries("WatchConversion", watch, deadline)
        if last is not None and last.status in ENDED:
            return last
        reconnects += 1
        wait = backoff_seconds(reconnects)
        say("retry", method="WatchConversion", code="STREAM_ENDED", attempt=reconnects, wait_seconds=round(wait, 3))
        time.sleep(wait)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("document", nargs="?", default="https://example.com/quarterly-review.pdf")
    parser.add_argument("--role", choices=("attendee", "host"), default="attendee", help="whose passphrase to use")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds for everything, retries included")
    args = parser.parse_args()
    passphrase_variable = f"BOARDLINE_{args.role.upper()}_PASSPHRASE"
    missing = [v for v in ("BOARDLINE_URL", "BOARDLINE_TOKEN", passphrase_variable) if not os.environ.get(v)]
    if missing:
        print(f"set {', '.join(missing)} (npm start in boardline prints them)", file=sys.stderr)
        return 2

    target = urlsplit(os.environ["BOARDLINE_URL"]).netloc
    auth = (("authorization", f"Bearer {os.environ['BOARDLINE_TOKEN']}"),)
    request = whiteboard_pb2.ConvertFileRequest(
        resource_url=args.document, passphrase=os.environ[passphrase_variable], conversion_type="static"
    )
    deadline = time.monotonic() + args.deadline
    with grpc.insecure_channel(target) as channel:
        stub = whiteboard_pb2_grpc.WhiteboardServiceStub(channel)
        try:
            task_uuid = convert(stub, auth, request, deadline)
            conversion = watch_to_end(stub, auth, task_uuid, deadline)
        except GaveUp:
            return 1
    if conversion.status != "Finished":
        say("conversion_failed", task_uuid=task_uuid, status=conversion.status, reason=conversion.failed_reason)
        return 1
    for page in conversion.pages:
        say("page", page=page.page, url=page.url)
    # backend_task_uuid: the backend's own id, which a whiteboard client loading a dynamic document needs.
    say(
        "finished",
        task_uuid=task_uuid,
        backend_task_uuid=conversion.backend_task_uuid,
        page_count=conversion.page_count,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
