"""`akv serve` on loopback for the Python checks (openai_check, agents_check, agentdojo_run):
one server per object, on 127.0.0.1 at a free port (--port 0, read back from its first line),
in a process group of its own so that a kill takes its children too. Every server started is
in SERVERS, for the caller's finally block and deadline to kill (bound_run, end_run)."""
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

SERVERS = []  # every server started, killed in the caller's finally and by its deadline


class SetupError(Exception):
    """The check could not start what it checks (a server, a venv, its inputs): exit 2, not 1."""


class Server:
    """One `akv serve --model MODEL EXTRA...` on 127.0.0.1; `url` is http://127.0.0.1:PORT.
    Raises SetupError with the server's last stderr line when it does not listen in wait_s."""

    def __init__(self, akv, model, *extra, wait_s=120):
        self.log = tempfile.TemporaryFile()
        cmd = [akv, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        SERVERS.append(self)
        lines = queue.Queue()
        # A reader thread, so that waiting for the line has a timeout and stdout never fills up.
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout], daemon=True).start()
        end = time.monotonic() + wait_s
        while True:
            try:
                line = lines.get(timeout=max(0.0, min(1.0, end - time.monotonic())))
            except queue.Empty:
                line = b""
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.url = f"http://127.0.0.1:{self.port}"
                return
            if self.proc.poll() is not None or time.monotonic() > end:
                self.kill()
                self.log.seek(0)
                err = self.log.read().decode(errors="replace").strip().splitlines()
                raise SetupError(f"{' '.join(cmd)} did not start: {err[-1] if err else 'no output'}")

    def stop(self, wait_s=20):
        """SIGTERM (the server drains, SV6), then SIGKILL; returns the exit status."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                return self.proc.wait(timeout=wait_s)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        self.kill()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def kill_all():
    for s in SERVERS:
        s.kill()


def bound_run(name, deadline_s=None, doing=lambda: ""):
    """Makes the run stop by itself: past deadline_s (None: no deadline) a FAIL line, every
    server killed, exit 1; on SIGTERM or SIGINT a line naming the signal and exit 2 (sys.exit, so
    the caller's finally runs end_run). `doing()` is appended to both lines (what ran then).
    Returns the timer for end_run."""
    def past_deadline():
        print(f"FAIL deadline: the run passed {deadline_s:.0f} s{doing()}", flush=True)
        kill_all()
        os._exit(1)

    def stopped(sig, _):
        print(f"akv: {name}: stopped by {signal.Signals(sig).name}{doing()}", file=sys.stderr)
        sys.exit(2)

    timer = None
    if deadline_s is not None:
        timer = threading.Timer(deadline_s, past_deadline)
        timer.daemon = True
        timer.start()
    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    return timer


def end_run(timer):
    """The caller's finally: the deadline cancelled, every server killed."""
    if timer is not None:
        timer.cancel()
    kill_all()
