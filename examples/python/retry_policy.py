"""What a boardline caller does with each gRPC error.

The table "What a caller does with each error" of docs/errors.md, as code: a refused
token or passphrase is not retried; RESOURCE_EXHAUSTED and ABORTED wait the
ErrorInfo's retry_after_seconds (plus jitter); UNAVAILABLE and
DEADLINE_EXCEEDED back off exponentially (100 ms doubling to 5 s, jittered).
"""

import random
from dataclasses import dataclass
from typing import Optional

import grpc
from google.rpc import error_details_pb2, status_pb2

FIRST_BACKOFF_SECONDS = 0.1
MAX_BACKOFF_SECONDS = 5.0
MAX_JITTER_SECONDS = 0.5


@dataclass(frozen=True)
class Verdict:
    """Whether to send the call again, after how long, and what to tell the user if not."""

    retry: bool
    wait_seconds: float = 0.0
    advice: str = ""


def error_info(err: grpc.RpcError) -> Optional[error_details_pb2.ErrorInfo]:
    """The google.rpc.ErrorInfo boardline puts in the grpc-status-details-bin trailer, if any."""
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)  # binary metadata arrives base64-decoded
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return info
    return None


def retry_after_seconds(err: grpc.RpcError) -> Optional[float]:
    """The ErrorInfo's metadata retry_after_seconds (the JSON answer's Retry-After), if any."""
    info = error_info(err)
    if info is None or "retry_after_seconds" not in info.metadata:
        return None
    return float(info.metadata["retry_after_seconds"])


def backoff_seconds(attempt: int) -> float:
    """Exponential back-off for the given attempt (1, 2, …), with half of it random."""
    ceiling = min(MAX_BACKOFF_SECONDS, FIRST_BACKOFF_SECONDS * 2 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def verdict(err: grpc.RpcError, attempt: int) -> Verdict:
    """What to do after the given attempt of a call failed with err."""
    code = err.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return Verdict(False, advice="get a fresh token: retrying this one never helps")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return Verdict(False, advice="the passphrase or the token does not allow this: tell the user or the operator")
    if code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED):
        after = retry_after_seconds(err)
        if after is not None:
            return Verdict(True, after + random.uniform(0, MAX_JITTER_SECONDS))
        if code == grpc.StatusCode.ABORTED:
            return Verdict(True, backoff_seconds(attempt))
        return Verdict(False, advice="the request is too big: split it")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Verdict(True, backoff_seconds(attempt))
    return Verdict(False, advice="fix the request: sent again unchanged it fails the same way")
