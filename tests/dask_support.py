"""A real Dask cluster on this machine for the grading tests: a `dask scheduler` process and
`dask worker` processes (one thread each) that talk over TCP, as on separate machines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from distributed import Client


class LocalDaskCluster:
    """Start with `with LocalDaskCluster(folder) as cluster:`; `cluster.address` is the
    scheduler's; `add_worker(name, env)` starts one more worker and waits until it joined."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.scheduler_file = folder / "scheduler.json"
        self.processes: dict[str, subprocess.Popen] = {}
        self.address = ""

    def __enter__(self) -> LocalDaskCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.scheduler_file.unlink(missing_ok=True)  # one of an earlier cluster
        self._start("scheduler", ["scheduler", "--port", "0"], {})
        for _ in range(600):
            if self.scheduler_file.is_file() and self.scheduler_file.read_text().strip():
                self.address = json.loads(self.scheduler_file.read_text())["address"]
                return self
            time.sleep(0.1)
        raise RuntimeError(f"the scheduler did not start: {self._log('scheduler')}")

    def __exit__(self, *exc: object) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def add_worker(self, name: str, env: dict[str, str] | None = None) -> None:
        command = ["worker", "--nthreads", "1", "--no-nanny", "--name", name]
        self._start(name, command, env or {})
        with Client(self.address, timeout=30) as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                names = {w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()}
                if name in names:
                    return
                if self.processes[name].poll() is not None:
                    break
                time.sleep(0.2)
        raise RuntimeError(f"worker {name} did not join: {self._log(name)}")

    def kill(self, name: str) -> None:
        """Kill a process at once (SIGKILL), as a machine that dies."""
        process = self.processes[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def _start(self, name: str, command: list[str], env: dict[str, str]) -> None:
        log = open(self.folder / f"{name}.log", "w")  # noqa: SIM115 (the process keeps it)
        common = ["--scheduler-file", str(self.scheduler_file), "--no-dashboard"]
        module = "distributed.cli.dask_" + command[0]
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", module, *command[1:], *common],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            cwd=self.folder,
            start_new_session=True,
        )

    def _log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()[-3000:]
