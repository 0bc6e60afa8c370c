"""A command's Spark Connect session gives up on a lost server within seconds from its very first
request: a server killed while a merge task created its session hung that task for 10 minutes in
Spark's own retries (the soak found it)."""

from __future__ import annotations

import json
import subprocess
import sys

# In a process of its own: the builder makes its session the process's default one.
FIRST_REQUEST = """
import json
from pyspark.sql.connect.client import core
from zipper.runtime.session import connect_session
seen = []
def config(self, operation):
    seen.append([(p.max_retries, p.max_backoff) for p in self.get_retry_policies()])
    raise RuntimeError("the first request")
core.SparkConnectClient.config = config
try:
    connect_session("sc://127.0.0.1:1/")
except RuntimeError:
    pass
print(json.dumps(seen))
"""


def test_the_first_request_of_a_session_already_gives_up_soon():
    done = subprocess.run([sys.executable, "-c", FIRST_REQUEST], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[[6, 2000]]]
