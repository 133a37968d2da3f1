#!/usr/bin/env python3
"""docs/openapi.yaml against the option table (partitioner/part_opts.c).

The JobParams schema of the HTTP API must list exactly the table's HTTP
members (plus "dataset"), each with the table's type, range, words and
choices: `test_opts --schema` (built from tests/test_opts.c) prints the
schema the table makes, and every property of JobParams, its description
and default set aside, must equal it.  (That the job parser keeps those bounds is
tests/test_opts.c's test_json_bounds; that `parsa serve` lists exactly
these members, tests/http/test_http.py.)
Ends with "N passed, N failed[, N skipped]".
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from clitest import Skip, finish, test  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("PARSA_BUILD", "build")
TEST_OPTS = os.path.join(BUILD, "tests", "test_opts")


def table_schema():
    if not os.path.exists(TEST_OPTS):
        raise AssertionError("%s not built" % TEST_OPTS)
    p = subprocess.run([TEST_OPTS, "--schema"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def openapi_params():
    try:
        import yaml
    except ImportError:
        raise Skip("python3-yaml not installed (scripts/deps.sh installs it)")
    spec = yaml.safe_load(open(os.path.join(ROOT, "docs", "openapi.yaml")))
    return spec["components"]["schemas"]["JobParams"]


def strip(schema):
    """A property without its prose (description) and default."""
    if isinstance(schema, dict):
        return {k: strip(v) for k, v in schema.items() if k not in ("description", "default")}
    if isinstance(schema, list):
        return [strip(x) for x in schema]
    return schema


@test
def test_openapi_lists_exactly_the_table():
    table = table_schema()
    props = openapi_params()["properties"]
    assert set(props) == set(table) | {"dataset"}, sorted(set(props) ^ (set(table) | {"dataset"}))
    assert openapi_params()["required"] == ["dataset", "k"]


@test
def test_openapi_types_and_ranges_are_the_table():
    table = table_schema()
    props = openapi_params()["properties"]
    for key, want in table.items():
        got = strip(props[key])
        assert got == want, "%s: openapi.yaml says %s, the table %s" % (key, got, want)


@test
def test_a_changed_table_would_fail():
    # the comparison is not vacuous: a table entry with another range or
    # another word is told apart
    table = table_schema()
    props = openapi_params()["properties"]
    k = dict(table["k"], maximum=table["k"]["maximum"] + 1)
    assert strip(props["k"]) != k
    gs = json.loads(json.dumps(table["guard_slack"]))
    gs["oneOf"][1]["enum"] = ["infinity"]
    assert strip(props["guard_slack"]) != gs


finish()
