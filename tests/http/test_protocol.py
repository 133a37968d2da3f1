#!/usr/bin/env python3
"""The HTTP service's answers at the protocol level, for the inputs the
HTTP fuzzer (tests/fuzz_http.c) found mishandled; their raw requests are
also in tests/corpus/http/ (replayed by `make test`).

Each server is the real binary (PARSA_BIN) on 127.0.0.1 with an ephemeral
port and its own state dir.  Ends with "N passed, N failed[, N skipped]".
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import finish, tmp  # noqa: E402

from httptest import Server, raw_exchange, serving  # noqa: E402


@serving
def test_http_version_other_than_1x_is_505():
    # evhttp accepts any HTTP/m.n with m <= 1 and answered in that version
    # ("HTTP/0.1 201 Created" after registering the upload)
    s = Server(tmp("st-proto-version"))
    svm = b"1 1:1 2:1\n-1 2:1 3:1\n"
    for version in (b"HTTP/0.1", b"HTTP/0.9", b"HTTP/-1.-5", b"HTTP/1.7"):
        out = raw_exchange(s.port, b"POST /v1/datasets?format=libsvm " + version +
                           b"\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(svm) + svm)
        assert out.startswith(b"HTTP/1.0 505 "), (version, out[:200])
        j = json.loads(out.partition(b"\r\n\r\n")[2])
        assert j["status"] == 505 and "HTTP/1.0 and HTTP/1.1" in j["detail"], j
    # nothing was registered
    assert s.json("GET", "/v1/datasets")["datasets"] == []
    # evhttp's own error page for such a request (a bad header line) was
    # "HTTP/-1.1 400" with its HTML page: problem+json in HTTP/1.0 now
    out = raw_exchange(s.port, b"GET /healthz HTTP/-1.1\r\nHost: x\r\n"
                       b"Bad\xffheader\r\n\r\n")
    assert out.startswith(b"HTTP/1.0 400 "), out[:200]
    assert b"application/problem+json" in out and b"<HTML>" not in out.upper(), out[:300]
    # 1.0 and 1.1 as before
    for version in (b"HTTP/1.0", b"HTTP/1.1"):
        out = raw_exchange(s.port, b"GET /healthz " + version + b"\r\nHost: x\r\n"
                           b"Connection: close\r\n\r\n")
        assert out.startswith(version + b" 200 "), out[:200]
    assert s.stop() == 0


@serving
def test_invalid_utf8_echoed_is_not_out_of_memory():
    # jansson refuses invalid UTF-8: the reply echoing it failed and was
    # answered 503 "out of memory"
    s = Server(tmp("st-proto-utf8"))
    out = raw_exchange(s.port, b"GET /v1/jobs\xce/j2 HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 404 "), out[:300]
    j = json.loads(out.partition(b"\r\n\r\n")[2])
    assert j["detail"] == "no such resource: /v1/jobs?/j2", j
    svm = b"1 1:1 2:1\n-1 2:1 3:1\n"
    out = raw_exchange(s.port, b"POST /v1/datasets?format=libsvm&name=a%FFb HTTP/1.1\r\n" +
                       b"Host: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                       % len(svm) + svm)
    assert out.startswith(b"HTTP/1.1 422 "), out[:300]
    j = json.loads(out.partition(b"\r\n\r\n")[2])
    assert j["field"] == "name" and "UTF-8" in j["detail"], j
    assert s.json("GET", "/v1/datasets")["datasets"] == []
    assert s.stop() == 0


if __name__ == "__main__":
    finish()
