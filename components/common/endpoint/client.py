"""HTTP to a serving endpoint (batch_predict's endpoint mode, stream_predict's): one
keep-alive connection per sending thread, bounded retries with backoff, and three kinds of failure.

- A transient failure (429, 502, 503, 504, a refused or reset connection, no answer within
  ``timeout_s``: endpoint_timeout_s) is retried ``retries`` times, 0.5 s doubling up to
  15 s between attempts (or the server's ``Retry-After``). Predicting is stateless, so a
  retried request that the server had already answered is only answered again: its rows
  are recorded once, from the answer that arrives.
- ``RowsRefused``: the server refused what the rows hold (400, 413, 422, 500); the caller
  narrows it down to the rows at fault.
- ``EndpointError``: anything else (401, 403, 404, retries spent, an answer that is not
  JSON): the run fails naming the URL, since no row could be answered correctly.

A bearer token comes from a file or a variable (``bearer_token``), or, for a Vertex AI
Endpoint, from the step's Google credentials (``GoogleAuth``), refreshed when expired.
"""

import http.client
import json
import logging
import os
import random
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Mapping, Tuple

from tfkfp.components.common.endpoint.errors import EndpointError, RowsRefused

log = logging.getLogger("tfkfp")

RETRIED = frozenset({429, 502, 503, 504})  # the server sheds load or is (re)starting
REFUSED = frozenset({400, 413, 422, 500})  # the rows' fault: bad values, too big, failed
FIRST_BACKOFF_S, MAX_BACKOFF_S = 0.5, 15.0


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


class EndpointClient:
    """GET and POST JSON to one server, from any number of threads (each its own
    keep-alive connection); counts requests and retries. ``auth`` gives headers sent with
    every request, asked afresh each time (credentials that expire)."""

    def __init__(self, base_url: str, headers: Dict[str, str], retries: int,
                 timeout_s: float, sleep: Callable[[float], None] = time.sleep,
                 auth: Callable[[], Mapping[str, str]] | None = None):
        parts = urllib.parse.urlsplit(base_url)
        self.base_url = base_url.rstrip("/")
        self.prefix = parts.path.rstrip("/")  # an ingress may serve the model under a path
        self.host, self.port, self.https = parts.hostname, parts.port, parts.scheme == "https"
        self.headers = {"Content-Type": "application/json", **headers}
        self.retries, self.timeout_s, self.sleep, self.auth = retries, timeout_s, sleep, auth
        self.requests = self.retried = 0
        self._count = threading.Lock()
        self._local = threading.local()

    def url(self, path: str) -> str:
        return self.base_url + path

    def get(self, path: str) -> Tuple[int, Any]:
        """(status, parsed JSON or text) of one GET, not retried; OSError when unreachable."""
        status, _, text = self._send("GET", path, None)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def post(self, path: str, body: bytes) -> Any:
        """The parsed JSON answer of a POST, retried on transient failures."""
        for attempt in range(self.retries + 1):
            try:
                status, headers, text = self._send("POST", path, body)
            except TimeoutError:  # before OSError, its base: the setting to name differs
                self.close()
                problem, wait = (f"did not answer within {self.timeout_s:g} s "
                                 "(endpoint_timeout_s)"), None
            except (OSError, http.client.HTTPException) as err:
                self.close()
                problem, wait = f"connection failed ({type(err).__name__}: {err})", None
            else:
                if status == 200:
                    return self._json(path, text)
                if status in REFUSED:
                    raise RowsRefused(status, _message(text))
                if status not in RETRIED:
                    raise EndpointError(f"{self.url(path)} answered {status}: "
                                        f"{_message(text)}")
                problem, wait = f"answered {status}", _retry_after(headers)
            if attempt == self.retries:
                raise EndpointError(f"{self.url(path)} {problem}; gave up after "
                                    f"{attempt + 1} attempts (endpoint_retries "
                                    f"{self.retries})")
            with self._count:
                self.retried += 1
            wait = wait if wait is not None else _backoff(attempt)
            log.warning("%s %s; retrying in %.1f s (attempt %d of %d)", self.url(path),
                        problem, wait, attempt + 2, self.retries + 1)
            self.sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _send(self, method: str, path: str, body: bytes | None):
        conn = self._connection()
        with self._count:
            self.requests += 1
        headers = {**self.headers, **self.auth()} if self.auth else self.headers
        conn.request(method, self.prefix + path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read()
        if response.will_close:
            self.close()
        return response.status, response.headers, text

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = self._local.conn = kind(self.host, self.port, timeout=self.timeout_s)
        return conn

    def close(self) -> None:
        """Drop this thread's connection (a broken one reconnects on the next request)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _json(self, path: str, text: bytes) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise EndpointError(f"{self.url(path)} answered 200 with a body that is not "
                                f"JSON: {text[:200]!r}") from None


def _backoff(attempt: int) -> float:
    """Exponential backoff with jitter, so restarted senders do not arrive together."""
    return min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** attempt) * random.uniform(0.8, 1.2)


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After", "") if headers is not None else ""
    try:
        return min(MAX_BACKOFF_S, max(0.0, float(value)))
    except ValueError:
        return None


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
