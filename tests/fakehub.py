"""A fake Hugging Face Hub on 127.0.0.1: the endpoints huggingface_hub 2.x calls to download a model.

- GET  /api/models/{org}/{name}/revision/{rev}[?blobs=true]  -> model info (sha, gated, siblings with size/lfs)
- HEAD /{org}/{name}/resolve/{rev}/{file}   -> X-Repo-Commit, ETag / X-Linked-Etag, Content-Length / X-Linked-Size
- GET  /{org}/{name}/resolve/{rev}/{file}   -> the bytes; `Range: bytes=N-` answers 206 with Content-Range
Errors carry huggingface_hub's X-Error-Code header (RepoNotFound, RevisionNotFound, GatedRepo, EntryNotFound).
Knobs: `gated` repos need the right bearer token; `stall` sends half a file then waits (an interrupted pull);
`drop` cuts the connection mid-file once; `corrupt` serves other bytes than the LFS sha256 states. Every request is logged (method, path, headers).
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

TOKEN = "hf_fakeSECRETtoken0123456789"


@dataclass
class Repo:
    files: dict[str, bytes]
    commits: dict[str, str] = field(default_factory=dict)   # branch/tag -> commit
    gated: bool = False
    stall: str = ""            # a file name: send half of it, then wait for `release`
    drop: str = ""             # a file name: send half of it and close the connection, once
    corrupt: str = ""          # a file name: serve flipped bytes (the LFS sha256 stays the true one)

    @classmethod
    def from_folder(cls, folder: Path, commit: str = "a" * 40, **kw) -> "Repo":
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        return cls(files, {"main": commit}, **kw)

    def commit(self, rev: str) -> str | None:
        if rev in self.commits.values():
            return rev
        return self.commits.get(rev)


def is_lfs(name: str) -> bool:
    return name.endswith((".safetensors", ".gguf"))


class FakeHub:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.log: list[tuple[str, str, dict]] = []
        self.half_sent = threading.Event()
        self.release = threading.Event()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.handle(self, body=True)

            def do_HEAD(self):
                hub.handle(self, body=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self) -> "FakeHub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    # ---- routing -------------------------------------------------------------------------------

    def handle(self, req: BaseHTTPRequestHandler, body: bool) -> None:
        url = urlparse(req.path)
        path = unquote(url.path)
        self.log.append((req.command, req.path, {k.lower(): v for k, v in req.headers.items()}))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            rev = parts[5] if len(parts) > 5 and parts[4] == "revision" else "main"
            return self.info(req, f"{parts[2]}/{parts[3]}", rev, body)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self.resolve(req, f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]), body)
        return self.error(req, 404, "", body)

    def error(self, req, status: int, code: str, body: bool, message: str = "") -> None:
        payload = json.dumps({"error": message or code or "not found"}).encode()
        req.send_response(status)
        if code:
            req.send_header("X-Error-Code", code)
        if message:
            req.send_header("X-Error-Message", message)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(payload)))
        req.end_headers()
        if body:
            req.wfile.write(payload)

    def authorized(self, req, repo: Repo) -> bool:
        return not repo.gated or req.headers.get("Authorization") == f"Bearer {TOKEN}"

    def info(self, req, repo_id: str, rev: str, body: bool) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self.error(req, 404, "RepoNotFound", body)
        commit = repo.commit(rev)
        if commit is None:
            return self.error(req, 404, "RevisionNotFound", body, "Invalid rev id")
        siblings = []
        for name, data in repo.files.items():
            entry = {"rfilename": name, "size": len(data), "blobId": hashlib.sha1(data).hexdigest()}
            if is_lfs(name):
                entry["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
            siblings.append(entry)
        payload = json.dumps({"id": repo_id, "modelId": repo_id, "sha": commit, "private": False,
                              "gated": "manual" if repo.gated else False, "disabled": False,
                              "siblings": siblings, "tags": [], "downloads": 0, "likes": 0}).encode()
        req.send_response(200)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(payload)))
        req.end_headers()
        if body:
            req.wfile.write(payload)

    def resolve(self, req, repo_id: str, rev: str, name: str, body: bool) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self.error(req, 404, "RepoNotFound", body)
        if not self.authorized(req, repo):
            return self.error(req, 401 if "Authorization" not in req.headers else 403, "GatedRepo", body,
                              "Access to model is restricted.")
        commit = repo.commit(rev)
        if commit is None:
            return self.error(req, 404, "RevisionNotFound", body)
        if name not in repo.files:
            return self.error(req, 404, "EntryNotFound", body)
        data = repo.files[name]
        etag = hashlib.sha256(data).hexdigest() if is_lfs(name) else hashlib.sha1(data).hexdigest()
        if name == repo.corrupt:
            data = bytes(b ^ 0xFF for b in data)
        start = 0
        rng = req.headers.get("Range", "")
        if rng.startswith("bytes=") and body:
            start = int(rng[6:].split("-")[0] or 0)
        req.send_response(206 if start else 200)
        req.send_header("X-Repo-Commit", commit)
        req.send_header("ETag", f'"{etag}"')
        if is_lfs(name):
            req.send_header("X-Linked-Etag", f'"{etag}"')
            req.send_header("X-Linked-Size", str(len(data)))
        req.send_header("Accept-Ranges", "bytes")
        if start:
            req.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        req.send_header("Content-Length", str(len(data) - start))
        req.end_headers()
        if not body:
            return
        chunk = data[start:]
        if name == repo.drop and not start:
            repo.drop = ""
            req.wfile.write(chunk[: len(chunk) // 2])
            req.wfile.flush()
            req.close_connection = True
            return
        if name == repo.stall and not start:
            req.wfile.write(chunk[: len(chunk) // 2])
            req.wfile.flush()
            self.half_sent.set()
            self.release.wait(timeout=20)
            req.close_connection = True
            return
        req.wfile.write(chunk)

    def requests(self, method: str = "GET", contains: str = "") -> list[tuple[str, str, dict]]:
        return [r for r in self.log if r[0] == method and contains in r[1]]
