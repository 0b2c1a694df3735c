"""Runs programs in worker processes, so a program that kills its process (a segfault, an
abort, a hang) is reported as a crash of that program instead of ending the run.

    with WorkerPool(jobs=2, timeout=60) as pool:
        for job, outcome, seconds in pool.run(jobs):
            ...

Each worker runs one program at a time; after a crash or a timeout it is replaced by a
fresh process for the next program.
"""

import dataclasses
import fcntl
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time

from tools.fuzz.runner import Outcome

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass
class Job:
    id: str
    source: str
    backends: tuple
    mode: str = "default"  # or "mutate-state": which runner the worker runs it with


class _Worker:
    """One worker process and its stderr file (kept for a crash's last words)."""

    STARTUP_SECONDS = 300.0  # importing torch on a loaded machine; not part of any job's time

    def __init__(self):
        self.stderr = tempfile.TemporaryFile(mode="w+b")
        # Appending: the file is emptied before each job and the worker writes on at its start.
        fcntl.fcntl(self.stderr.fileno(), fcntl.F_SETFL, fcntl.fcntl(self.stderr.fileno(), fcntl.F_GETFL) | os.O_APPEND)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_REPO_ROOT, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tools.fuzz.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, cwd=_REPO_ROOT, env=env,
        )
        self.buffer = b""
        ready = self.read_answer(time.monotonic() + self.STARTUP_SECONDS)
        self.started = ready is not None and ready.get("event") == "ready"

    def send(self, job, dump_after=None):
        self.stderr.truncate(0)  # the last words kept are this job's
        request = {"id": job.id, "source": job.source, "backends": list(job.backends), "dump_after": dump_after,
                   "mode": job.mode}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()

    def read_answer(self, deadline):
        """The next answer, or None at end of stream or past the deadline."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def last_words(self, limit=8000):
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - limit))
        return self.stderr.read().decode(errors="replace")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.stderr.close()


class WorkerPool:
    def __init__(self, jobs=1, timeout=120.0):
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self._idle = queue.Queue()  # started workers between runs (a shrinker runs one job at a time)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        while not self._idle.empty():
            self._idle.get().stop()
        return False

    def run(self, jobs):
        """Yields (job, Outcome, seconds) as programs finish (not necessarily in order)."""
        pending = queue.Queue()
        for job in jobs:
            pending.put(job)
        done = queue.Queue()
        lanes = [threading.Thread(target=self._lane, args=(pending, done), daemon=True) for _ in range(self.jobs)]
        for lane in lanes:
            lane.start()
        finished = 0
        while finished < len(lanes):
            item = done.get()
            if item is None:
                finished += 1
            else:
                yield item

    def run_one(self, job):
        (item,) = list(self.run([job]))
        return item[1]

    def _lane(self, pending, done):
        worker = None
        try:
            while True:
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    return
                worker = worker or self._worker()
                outcome, seconds = self._run_job(worker, job)
                if outcome.verdict == "crash":
                    worker.stop()
                    worker = None
                done.put((job, outcome, seconds))
        finally:
            if worker is not None:
                self._idle.put(worker)
            done.put(None)

    def _worker(self):
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return _Worker()

    def _run_job(self, worker, job):
        start = time.monotonic()
        if not worker.started:
            return self._crash(worker, "the worker did not start"), 0.0
        try:
            worker.send(job, dump_after=self.timeout * 0.9)  # stacks in the last words of a hang
        except BrokenPipeError:
            return self._crash(worker, "the worker died before the program was sent"), 0.0
        deadline = start + self.timeout
        while True:
            answer = worker.read_answer(deadline)
            if answer is None:
                timed_out = time.monotonic() >= deadline and worker.process.poll() is None
                reason = f"no answer within {self.timeout:.0f}s (a hang)" if timed_out else "the worker process died"
                return self._crash(worker, reason), time.monotonic() - start
            if answer["event"] == "done":
                return Outcome(**answer["outcome"]), answer["seconds"]

    @staticmethod
    def _crash(worker, reason):
        if worker.process.poll() is None:
            worker.process.kill()
        code = worker.process.wait()
        return Outcome("crash", f"{reason}; exit status {code}\n{worker.last_words()}")
