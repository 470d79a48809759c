"""The suite's one HTTP client for its outbound calls (batch_predict's endpoint mode,
stream_predict's, deploy_model's readiness check, smoke test and gate): one keep-alive
connection per sending thread (urllib3's), urllib3's ``Retry`` with the suite's schedule on
top (backoff.py), and three kinds of failure.

- A transient failure (429, 502, 503, 504, a refused or reset connection, no answer within
  ``timeout_s``: endpoint_timeout_s) is retried ``retries`` times, 0.5 s doubling up to
  15 s between attempts (or the server's ``Retry-After``, at most 15 s). Predicting is
  stateless, so a retried request that the server had already answered is only answered
  again: its rows are recorded once, from the answer that arrives.
- ``RowsRefused``: the server refused what the rows hold (400, 413, 422, 500); the caller
  narrows it down to the rows at fault.
- ``EndpointError``: anything else (401, 403, 404, retries spent, an answer that is not
  JSON): the run fails naming the URL, since no row could be answered correctly.

A bearer token comes from a file or a variable (``bearer_token``), or, for a Vertex AI
Endpoint, from the step's Google credentials (``GoogleAuth``), refreshed when expired.
"""

import json
import logging
import os
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Mapping, NamedTuple, NoReturn, Tuple

import urllib3
from urllib3 import exceptions as u3
from urllib3.util.retry import RequestHistory

from tfkfp.components.common.endpoint.backoff import RETRIED, Backoff
from tfkfp.components.common.endpoint.errors import EndpointError, RowsRefused

log = logging.getLogger("tfkfp")

REFUSED = frozenset({400, 413, 422, 500})  # the rows' fault: bad values, too big, failed


def bearer_token(token_file: str, token_env: str) -> str:
    """The bearer token from a file (a mounted Secret) or an environment variable; ""
    when neither is set. Never logged."""
    if token_file:
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as err:
            raise EndpointError(f"endpoint_token_file {token_file}: cannot read it ({err})"
                                ) from None
        if not token:
            raise EndpointError(f"endpoint_token_file {token_file} is empty")
        return token
    if token_env:
        token = os.environ.get(token_env, "").strip()
        if not token:
            raise EndpointError(f"endpoint_token_env {token_env}: the variable is not set "
                                "or empty in the step's environment")
        return token
    return ""


GOOGLE_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


class GoogleAuth:
    """The step's Google credentials as an Authorization header, refreshed whenever they
    have expired (a run can outlive an access token); one refresh at a time."""

    def __init__(self, credentials=None):
        self.credentials = credentials if credentials is not None else google_credentials()
        self.refreshes = 0
        self._lock = threading.Lock()

    def __call__(self) -> Dict[str, str]:
        with self._lock:
            if not self.credentials.valid:
                self._refresh()
            return {"Authorization": f"Bearer {self.credentials.token}"}

    def _refresh(self) -> None:
        import google.auth.exceptions
        import google.auth.transport.requests

        try:
            self.credentials.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.RefreshError as err:
            raise EndpointError(f"the step's Google credentials could not be refreshed: "
                                f"{err}") from None
        self.refreshes += 1


def google_credentials():
    """google.auth.default()'s credentials for Vertex AI; EndpointError when the extra that
    brings google-auth is missing or the step has no Google credentials."""
    try:
        import google.auth
        import google.auth.exceptions
    except ImportError as err:
        raise EndpointError(f"endpoint_protocol vertex needs the 'vertex' extra, which this "
                            f"install leaves out (no {err.name or 'google.auth'}): pip "
                            "install 'tfkfp[vertex]'") from None
    try:
        credentials, _ = google.auth.default(scopes=list(GOOGLE_SCOPES))
    except google.auth.exceptions.DefaultCredentialsError as err:
        raise EndpointError(f"endpoint_protocol vertex: the step has no Google credentials "
                            f"({err}); run it with a service account (workload identity on "
                            "GKE, Vertex AI's) or set GOOGLE_APPLICATION_CREDENTIALS") \
            from None
    return credentials


class Answer(NamedTuple):
    """A server's answer: its status, reason phrase and body."""

    status: int
    reason: str
    data: bytes


class EndpointClient:
    """GET and POST JSON to one server, from any number of threads (each its own
    keep-alive connection); counts requests and retries. ``auth`` gives headers sent with
    every request, asked afresh for each attempt (credentials that expire)."""

    def __init__(self, base_url: str, headers: Dict[str, str], retries: int,
                 timeout_s: float, sleep: Callable[[float], None] = time.sleep,
                 auth: Callable[[], Mapping[str, str]] | None = None):
        self.base_url = base_url.rstrip("/")
        # an ingress may serve the model under a path
        self.prefix = urllib.parse.urlsplit(base_url).path.rstrip("/")
        self.headers = {"Content-Type": "application/json", **headers}
        self.retries, self.timeout_s, self.sleep, self.auth = retries, timeout_s, sleep, auth
        self.requests = self.retried = 0
        self._count = threading.Lock()
        self._local = threading.local()

    def url(self, path: str) -> str:
        return self.base_url + path

    def backoff(self, **kwargs: Any) -> Backoff:
        """A Backoff (backoff.py) that sleeps through this client's ``sleep``."""
        return Backoff(sleep=self.sleep, **kwargs)

    def send(self, method: str, path: str, body: bytes | None = None,
             retry: Backoff | None = None) -> Answer:
        """One request, retried as ``retry`` says (None: not at all); the answer, whatever
        its status (a retried status that stays is answered); OSError when none came."""
        retry = retry if retry is not None else self.backoff()
        try:
            response = self._open(method, path, body, retry)
        except u3.HTTPError as err:
            raise _os_error(err) from None
        return Answer(response.status, response.reason or "", response.data)

    def get(self, path: str, retry: Backoff | None = None) -> Tuple[int, Any]:
        """(status, parsed JSON or bytes) of one GET, retried as ``retry`` says (None: not
        at all); OSError when unreachable."""
        status, _, text = self.send("GET", path, None, retry)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def post(self, path: str, body: bytes) -> Any:
        """The parsed JSON answer of a POST, retried on transient failures (each retry
        logged)."""
        def on_wait(last: RequestHistory, wait: float, failures: int) -> None:
            with self._count:
                self.retried += 1
            log.warning("%s %s; retrying in %.1f s (attempt %d of %d)", self.url(path),
                        self._problem(last.error, last.status), wait, failures + 1,
                        self.retries + 1)

        retry = self.backoff(total=self.retries, status_forcelist=RETRIED, on_wait=on_wait)
        try:
            response = self._open("POST", path, body, retry)
        except u3.MaxRetryError as err:
            self._give_up(path, self._problem(err.reason, None))
        except u3.HTTPError as err:
            raise EndpointError(f"{self.url(path)} {self._problem(err, None)}") from None
        status, text = response.status, response.data
        if status == 200:
            return self._json(path, text)
        if status in REFUSED:
            raise RowsRefused(status, _message(text))
        if status in RETRIED:
            self._give_up(path, f"answered {status}")
        raise EndpointError(f"{self.url(path)} answered {status}: {_message(text)}")

    def _open(self, method: str, path: str, body: bytes | None, retry: Backoff) -> Any:
        """urllib3's answer, tried again as ``retry`` (urllib3's Retry) says; its headers
        (``auth``'s among them) made afresh for each attempt. MaxRetryError when spent."""
        url = self.prefix + path
        while True:
            headers = {**self.headers, **self.auth()} if self.auth else self.headers
            with self._count:
                self.requests += 1
            pool = self._pool()
            try:
                response = pool.urlopen(method, url, body=body, headers=headers,
                                        retries=False, redirect=False, assert_same_host=False)
            except u3.HTTPError as err:  # no answer (refused, reset, timed out)
                retry = retry.increment(method, url, error=err, _pool=pool)
                retry.sleep()
                continue
            if not retry.is_retry(method, response.status):
                return response
            try:
                retry = retry.increment(method, url, response=response, _pool=pool)
            except u3.MaxRetryError:
                return response  # a retried status that stays is answered
            retry.sleep(response)

    def _give_up(self, path: str, problem: str) -> NoReturn:
        raise EndpointError(f"{self.url(path)} {problem}; gave up after {self.retries + 1} "
                            f"attempts (endpoint_retries {self.retries})") from None

    def _problem(self, error: BaseException | None, status: int | None) -> str:
        if error is None:
            return f"answered {status}"
        if isinstance(error, (u3.ReadTimeoutError, u3.ConnectTimeoutError)) and \
                not isinstance(error, u3.NewConnectionError):
            return f"did not answer within {self.timeout_s:g} s (endpoint_timeout_s)"
        cause = _os_error(error)
        return f"connection failed ({type(cause).__name__}: {cause})"

    def _pool(self) -> urllib3.HTTPConnectionPool:
        """This thread's connection (urllib3 drops a broken one and connects again)."""
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = urllib3.connection_from_url(
                self.base_url, maxsize=1, block=False, retries=False,
                timeout=urllib3.Timeout(connect=self.timeout_s, read=self.timeout_s))
        return pool

    def close(self) -> None:
        """Drop this thread's connection (the next request connects again)."""
        pool = getattr(self._local, "pool", None)
        if pool is not None:
            pool.close()
            self._local.pool = None

    def _json(self, path: str, text: bytes) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise EndpointError(f"{self.url(path)} answered 200 with a body that is not "
                                f"JSON: {text[:200]!r}") from None


def _os_error(error: BaseException) -> OSError:
    """The OSError under urllib3's wrapping (refused, reset, timed out), as http.client
    would have raised it; else the error's text as a ConnectionError."""
    seen = error
    for _ in range(8):
        if isinstance(seen, OSError):
            return seen
        nested = getattr(seen, "reason", None) if isinstance(seen, u3.MaxRetryError) else None
        nested = nested or seen.__cause__ or next(
            (a for a in seen.args if isinstance(a, BaseException)), None) or seen.__context__
        if nested is None:
            break
        seen = nested
    return ConnectionError(str(error))


def _message(text: bytes) -> str:
    """The server's error message: a JSON body's ``error`` (its ``message`` where it is an
    object) or ``detail``, else its text."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.decode("utf-8", "replace")[:500]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and "message" in error:  # Google APIs: code, message
            return str(error["message"])[:500]
        return str(error or body.get("detail") or body)[:500]
    return str(body)[:500]
