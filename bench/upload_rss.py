#!/usr/bin/env python3
"""Memory of `parsa serve` while uploads arrive (BENCHMARKS.md, "HTTP
service"; issue 19): N concurrent uploads (POST /v1/datasets, the body a
generated LIBSVM file of about --mb MB) to one server, its resident set
size (VmRSS) sampled every 20 ms: before, the peak while the bodies are
being sent, and the peak until every registration has answered (which
includes reading the datasets).  Nothing is kept: the file and the state
dir are in a temporary directory.

Usage: python3 bench/upload_rss.py [PARSA_BIN] [--uploads 3] [--mb 100]
"""
import os
import sys

# bench/http.py would shadow the standard library's http package
sys.path = [p for p in sys.path
            if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import argparse  # noqa: E402
import http.client  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin", nargs="?", default="build/parsa")
    ap.add_argument("--uploads", type=int, default=3)
    ap.add_argument("--mb", type=int, default=100)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="parsa-upload-rss-")
    data = os.path.join(tmp, "up.svm")
    # about 250 bytes a line
    subprocess.run([a.bin, "gen", "--examples", str(a.mb * 4000), "--features",
                    "200000", "--avg-nnz", "25", "--out", data, "-q"], check=True)
    size = os.path.getsize(data)
    srv = subprocess.Popen([a.bin, "serve", "--listen", "127.0.0.1:0", "--state-dir",
                            os.path.join(tmp, "state"), "--max-upload", "1G", "--cache", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(srv.stdout.readline().strip().rsplit(":", 1)[1])
    time.sleep(0.3)
    before = rss_kb(srv.pid)
    sent = [0]
    status = []

    def upload():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        with open(data, "rb") as f:
            c.request("POST", "/v1/datasets?format=libsvm", body=f,
                      headers={"Content-Length": str(size)})
            sent[0] += 1
            r = c.getresponse()
            r.read()
            status.append(r.status)
        c.close()

    th = [threading.Thread(target=upload) for _ in range(a.uploads)]
    for t in th:
        t.start()
    peak_send = peak_all = before
    while any(t.is_alive() for t in th):
        r = rss_kb(srv.pid)
        peak_all = max(peak_all, r)
        if sent[0] < a.uploads:
            peak_send = max(peak_send, r)
        time.sleep(0.02)
    srv.terminate()
    srv.wait()
    subprocess.run(["rm", "-rf", tmp])
    print("%d uploads of %.1f MB at once (%s): RSS before %.0f MB, peak while "
          "sending %.0f MB, peak until registered %.0f MB; statuses %s" % (
              a.uploads, size / 1e6, a.bin, before / 1024, peak_send / 1024,
              peak_all / 1024, sorted(status)))


if __name__ == "__main__":
    sys.exit(main())
