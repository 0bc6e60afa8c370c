"""The job a Spark Connect task starts ends with the task's process: killed outright, the task
process would otherwise leave its job running and holding the table's lock, refusing the task's
retries ("another run is writing this table now")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

# A stand-in for the task process: it starts a job that would run for an hour the way the hook
# starts the zipper job, says the job's pid, and waits.
TASK = """
import functools, os, subprocess, sys
from zipper.airflow.hooks import ends_with_its_task
job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                       preexec_fn=functools.partial(ends_with_its_task, os.getpid()))
print(job.pid, flush=True)
job.wait()
"""


def test_the_job_ends_when_its_task_process_is_killed():
    task = subprocess.Popen([sys.executable, "-c", TASK], stdout=subprocess.PIPE, text=True)
    job = int(task.stdout.readline())
    os.kill(task.pid, signal.SIGKILL)
    task.wait()
    deadline = time.monotonic() + 60  # for it to come true; nothing asserts how soon
    while time.monotonic() < deadline and os.path.exists(f"/proc/{job}") and "Z" not in _state(job):
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{job}") or "Z" in _state(job), "the job outlived its task"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
