"""A Spark standalone cluster on this machine, for tests and benchmarks: a
master and workers on 127.0.0.1, started with the ``bin/spark-class`` that
PySpark ships (``org.apache.spark.deploy.master.Master``,
``org.apache.spark.deploy.worker.Worker``), each in a process group of its
own so that stopping it also stops the executor JVMs and Python workers it
started.

    with Standalone(workers=2, cores=1, memory="2g") as cluster:
        spark = SparkSession.builder.master(cluster.url)...

The context manager stops every process it started when the block ends,
on an error too; ``stop`` can be called any number of times.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any, List, Optional


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Standalone:
    """A master and ``workers`` workers of ``cores`` cores and ``memory``
    each, on 127.0.0.1."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "2g", timeout: float = 120.0) -> None:
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.procs: List[subprocess.Popen] = []
        self.dir: Optional[str] = None
        self.url = ""
        self.ui = ""

    def _start(self, *args: str, log: str) -> None:
        assert self.dir is not None
        env = dict(os.environ, SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=self.dir)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        out = open(os.path.join(self.dir, log), "wb")
        cmd = [os.path.join(spark_home(), "bin", "spark-class"), *args]
        # A session of its own: the process group holds the executors and Python workers it starts.
        self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        out.close()

    def start(self) -> "Standalone":
        self.dir = tempfile.mkdtemp(prefix="rsimhash-standalone-")
        port, ui = free_port(), free_port()
        self.url, self.ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}"
        try:
            self._start(
                "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui),
                log="master.log",
            )  # fmt: skip
            self._wait(lambda state: True, "the master")
            for w in range(self.workers):
                work = os.path.join(self.dir, f"worker-{w}")
                os.makedirs(work)
                self._start(
                    "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(self.cores),
                    "--memory", self.memory, "--webui-port", str(free_port()), "--work-dir", work, self.url,
                    log=f"worker-{w}.log",
                )  # fmt: skip
            self._wait(
                lambda state: sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE") >= self.workers, "the workers"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> Any:
        with urllib.request.urlopen(self.ui + "/json/", timeout=5) as r:
            return json.load(r)

    def _wait(self, ready: Any, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{what} exited with status {dead[0].returncode}: {self.logs()}")
            try:
                if ready(self.state()):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start in {self.timeout:.0f} s: {self.logs()}")
            time.sleep(0.5)

    def logs(self) -> str:
        if not self.dir or not os.path.isdir(self.dir):
            return ""
        text = []
        for name in sorted(os.listdir(self.dir)):
            path = os.path.join(self.dir, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    text.append(f"--- {name}\n" + f.read()[-3000:].decode("utf-8", "replace"))
        return "\n".join(text)

    def stop(self) -> None:
        """Every process started, and its process group, stopped (TERM, then
        KILL after 20 s); the logs and work directories removed."""
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 20
        for p in reversed(self.procs):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group's stragglers (executors), and p if still running
            except ProcessLookupError:
                pass
            p.wait()
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> "Standalone":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
