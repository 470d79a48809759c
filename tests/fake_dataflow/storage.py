"""Cloud Storage's JSON API and Google's OAuth token endpoint, faked on loopback for what
Beam's DataflowRunner does before it creates a job: it reads the staging bucket
(``buckets.get``), looks for each staged file (``objects.get``) and uploads it with a
resumable upload (``POST /upload/storage/v1/b/{bucket}/o?uploadType=resumable`` with the
object's metadata, answered with a ``Location``; one ``PUT`` of the bytes with a
``Content-Range``, answered with the object's resource and its ``crc32c`` and ``md5Hash``,
which the client checks).

Point google-cloud-storage at it with ``STORAGE_EMULATOR_HOST``. Service-account
credentials whose ``token_uri`` is ``<url>/token`` get their access tokens here
(``{"access_token", "expires_in"}``); google-auth sends an authorized user's refreshes to
Google's endpoint whatever its file says.
Every uploaded object is kept in ``objects`` ((bucket, name) -> bytes). Requests without a
bearer token get 401, like the real service's private buckets. No network beyond loopback."""

import base64
import hashlib
import http.server
import itertools
import json
import threading
import urllib.parse
from typing import Dict, Tuple

import google_crc32c
from threaded_server import JSON_UTF8, answering, send_json

TOKEN = "fake-access-token"


class FakeStorage(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, buckets=("tfkfp-test-bucket",)):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.buckets = set(buckets)
        self.lock = threading.Lock()
        self.objects: Dict[Tuple[str, str], bytes] = {}
        self.uploads: Dict[str, Tuple[str, str]] = {}
        self.ids = itertools.count(1)
        self.tokens_issued = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _resource(bucket: str, name: str, data: bytes) -> Dict:
    crc = google_crc32c.Checksum(data).digest()
    return {"kind": "storage#object", "bucket": bucket, "name": name, "size": str(len(data)),
            "generation": "1", "crc32c": base64.b64encode(crc).decode(),
            "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path, _ = self._split()
        parts = path.split("/")  # '', storage, v1, b, BUCKET[, o, NAME]
        if not self._authorised() or not self._bucket_exists(parts):
            return
        bucket = parts[4]
        if len(parts) == 5:
            return self._answer(200, {"kind": "storage#bucket", "id": bucket, "name": bucket})
        name = urllib.parse.unquote("/".join(parts[6:]))
        with self.server.lock:
            data = self.server.objects.get((bucket, name))
        if data is None:
            return self._answer(404, {"error": {"code": 404, "message": "No such object: "
                                                f"{bucket}/{name}"}})
        self._answer(200, _resource(bucket, name, data))

    def do_POST(self):
        path, query = self._split()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if path == "/token":
            self.server.tokens_issued += 1
            return self._answer(200, {"access_token": TOKEN, "expires_in": 3600,
                                      "token_type": "Bearer"})
        parts = path.split("/")  # '', upload, storage, v1, b, BUCKET, o
        if not self._authorised() or not self._bucket_exists(parts[1:]):
            return
        name = query.get("name") or json.loads(body or b"{}").get("name", "")
        upload = str(next(self.server.ids))
        with self.server.lock:
            self.server.uploads[upload] = (parts[5], name)
        location = f"{self.server.url}{path}?uploadType=resumable&upload_id={upload}"
        self._answer(200, {}, {"Location": location})

    def do_PUT(self):
        _, query = self._split()
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.server.lock:
            target = self.server.uploads.pop(query.get("upload_id", ""), None)
        if target is None:
            return self._answer(404, {"error": {"code": 404, "message": "no such upload"}})
        # One PUT carries the whole file ("bytes 0-N/N+1", or "bytes */0" when empty).
        with self.server.lock:
            self.server.objects[target] = data
        self._answer(200, _resource(*target, data))

    def _split(self):
        parsed = urllib.parse.urlsplit(self.path)
        return parsed.path, dict(urllib.parse.parse_qsl(parsed.query))

    def _authorised(self) -> bool:
        if self.headers.get("Authorization", "").startswith("Bearer "):
            return True
        self._answer(401, {"error": {"code": 401, "message": "Anonymous caller does not have "
                                                            "storage access."}})
        return False

    def _bucket_exists(self, parts) -> bool:
        if len(parts) > 4 and parts[4] in self.server.buckets:
            return True
        self._answer(404, {"error": {"code": 404, "message": "The specified bucket does not "
                                                            "exist."}})
        return False

    def _answer(self, code: int, body: Dict, headers: Dict | None = None):
        send_json(self, code, body, {"Content-Type": JSON_UTF8, **(headers or {})})


def serving(**kwargs):
    """A FakeStorage answering on loopback for the block's length."""
    return answering(FakeStorage(**kwargs))
