"""parsa.Client: the HTTP service (`parsa serve`, docs/openapi.yaml).

>>> c = parsa.Client("http://127.0.0.1:8080", token=None)
>>> ds = c.register("data/a9a-sample.svm.gz")          # upload the file
>>> job = c.start(ds["id"], 4, seed=1, quality="fast")
>>> c.wait(job["id"], progress=lambda f, phase: print(f, phase))
>>> pl = c.placement(job["id"])   # .examples, .features, .feature_ids, .report

Only the standard library (urllib) and numpy.
"""
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np


def _id_json(v):
    """A feature id as the service reads it for any id: a number below
    2^53, else a decimal string (JSON numbers stop at 2^63-1 there)."""
    return v if v < 2 ** 53 else str(v)


class RemotePlacement:
    """A finished job's placement: examples (part of every example, numpy
    int32), features (the server of every feature, numpy int32) with
    feature_ids (numpy uint64, the input's ids, in the service's order),
    k, report (the job's JSON report) and metrics (its "metrics")."""

    def __init__(self, k, examples, features, feature_ids, report):
        self.k = k
        self.examples, self.features, self.feature_ids = examples, features, feature_ids
        self.report = report
        self.metrics = report.get("metrics") if report else None

    def __repr__(self):
        return "RemotePlacement(k=%d, examples=%d, features=%d)" % (
            self.k, len(self.examples), len(self.features))


class Client:
    """A client of `parsa serve` at url (e.g. "http://127.0.0.1:8080").

    token: the service's bearer token (--token-file), or None.  Errors of
    the service raise RuntimeError with its problem's title and detail.
    """

    def __init__(self, url, token=None, timeout=600):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _req(self, method, path, body=None, ctype=None, raw=False):
        data, headers = None, {}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None:
            if isinstance(body, (bytes, bytearray)):
                data = bytes(body)
                headers["Content-Type"] = ctype or "application/octet-stream"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                out = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                p = json.loads(text)
                text = "%s: %s" % (p.get("title", ""), p.get("detail", text))
            except ValueError:
                pass
            raise RuntimeError("parsa service: %s %s: %d %s" % (method, path, e.code, text))
        return out if raw else (json.loads(out) if out else None)

    def health(self):
        """GET /healthz."""
        return self._req("GET", "/healthz")

    def register(self, path=None, *, server_path=None, format=None, graph=None, name=None):
        """Register a dataset: upload the local file path, or (server_path)
        name a file inside the service's --data-dir.  Returns its record
        ({"id", "examples", "features", ...})."""
        if (path is None) == (server_path is None):
            raise ValueError("parsa: give exactly one of path and server_path")
        if server_path is not None:
            body = {"path": server_path}
            if format:
                body["format"] = format
            if graph:
                body["graph"] = graph
            return self._req("POST", "/v1/datasets", body)
        q = {k: v for k, v in (("format", format), ("graph", graph),
                               ("name", name or os.path.basename(path))) if v}
        with open(path, "rb") as f:
            data = f.read()
        return self._req("POST", "/v1/datasets?" + urllib.parse.urlencode(q), data)

    def start(self, dataset, k, **params):
        """Start a partition job (POST /v1/jobs) with the job members as
        keyword arguments (quality, seed, method, imbalance, time_limit,
        threads, ...).  Returns the job ({"id", "state", ...})."""
        body = dict(params, dataset=dataset, k=k)
        return self._req("POST", "/v1/jobs", body)

    def job(self, job_id):
        """GET /v1/jobs/{id}: state, phase, progress, report."""
        return self._req("GET", "/v1/jobs/%s" % urllib.parse.quote(job_id))

    def cancel(self, job_id):
        """DELETE /v1/jobs/{id}."""
        return self._req("DELETE", "/v1/jobs/%s" % urllib.parse.quote(job_id))

    def wait(self, job_id, progress=None, timeout=None, poll=0.2):
        """Wait until the job ends; progress(fraction, phase) is called as
        it advances.  Returns the job; RuntimeError when it failed or was
        cancelled, TimeoutError after timeout seconds."""
        t0 = time.monotonic()
        last = None
        while True:
            if progress is None:
                left = 600 if timeout is None else max(1, int(timeout - (time.monotonic() - t0)))
                j = self._req("GET", "/v1/jobs/%s?wait=%d"
                              % (urllib.parse.quote(job_id), min(left, 600)))
            else:
                j = self.job(job_id)
                cur = (j.get("progress"), j.get("phase"))
                if cur != last:
                    progress(float(j.get("progress") or 0), j.get("phase"))
                    last = cur
            if j["state"] in ("succeeded", "failed", "cancelled"):
                if j["state"] != "succeeded":
                    raise RuntimeError("parsa service: job %s %s: %s"
                                       % (job_id, j["state"], j.get("error")))
                if progress is not None and last != (1.0, "done"):
                    progress(1.0, "done")
                return j
            if timeout is not None and time.monotonic() - t0 > timeout:
                raise TimeoutError("parsa service: job %s still %s" % (job_id, j["state"]))
            if progress is not None:
                time.sleep(poll)

    def placement(self, job_id):
        """The finished job's placement as numpy arrays (RemotePlacement)."""
        q = urllib.parse.quote(job_id)
        ex = self._req("GET", "/v1/jobs/%s/placement/examples?format=json" % q)
        ft = self._req("GET", "/v1/jobs/%s/placement/features?format=json" % q)
        # feature ids from 2^53 on come as decimal strings (README)
        pairs = np.asarray([(int(f), p) for f, p in ft["features"]],
                           dtype=np.uint64).reshape(-1, 2)
        report = self._req("GET", "/v1/jobs/%s/report" % q)
        return RemotePlacement(ex["k"], np.asarray(ex["examples"], dtype=np.int32),
                               pairs[:, 1].astype(np.int32), pairs[:, 0].copy(), report)

    def assign(self, job_id, rows):
        """POST /v1/jobs/{id}/assign: the part for each new example (a list
        of lists of feature ids); numpy int32 array."""
        r = self._req("POST", "/v1/jobs/%s/assign" % urllib.parse.quote(job_id),
                      {"examples": [[_id_json(int(f)) for f in row] for row in rows]})
        return np.asarray(r["parts"], dtype=np.int32)

    def partition(self, path, k, progress=None, **params):
        """Upload path, partition it into k parts and wait: a
        RemotePlacement."""
        ds = self.register(path)
        job = self.start(ds["id"], k, **params)
        self.wait(job["id"], progress=progress)
        return self.placement(job["id"])
