"""Grading on Dask, on paper (issue 34): the Kubernetes files under deploy/ parse and say what
the workers need, the Slurm recipe (deploy/dask/slurm.py) and its helper
(deploy/dask/run_grading.py) compile, answer --help, and write a worker job that runs one
thread per worker in the grading environment, and every command they name exists.

Needs PyYAML; the Dask checks skip without `distributed` (the `dask` extra), the job script's
without `dask-jobqueue`, the TLS one without `cryptography`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEPLOY = REPO_ROOT / "deploy"
DASK_GRADING = DEPLOY / "kubernetes" / "dask-grading.yaml"
DOCKERFILE = DEPLOY / "kubernetes" / "grader.Dockerfile"
SLURM = DEPLOY / "dask" / "slurm.py"
RUN_GRADING = DEPLOY / "dask" / "run_grading.py"
CLUSTER = "dyngraph-grading"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run_grading():
    return _load(RUN_GRADING, "deploy_dask_run_grading")


@pytest.fixture(scope="module")
def slurm():
    return _load(SLURM, "deploy_dask_slurm")


@pytest.fixture(scope="module")
def dask_job() -> dict:
    documents = [d for d in yaml.safe_load_all(DASK_GRADING.read_text()) if d is not None]
    (job,) = [d for d in documents if d["kind"] == "DaskJob"]
    return {"job": job, "documents": documents}


def _containers(pod_spec: dict) -> list[dict]:
    return pod_spec["containers"]


# --- every YAML file under deploy/ ----------------------------------------------------------------


def test_every_deploy_yaml_parses_with_kinds_and_names() -> None:
    files = sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])
    assert DASK_GRADING in files
    kinds = []
    for path in files:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert documents, path
        for document in documents:
            assert isinstance(document, dict), path
            if path.name == "values.yaml":  # Helm values (Zero to JupyterHub): no kind
                assert "kind" not in document and "hub" in document, path
                continue
            assert document.get("apiVersion") and document.get("kind"), path
            name = re.sub(r"ASSIGNMENT|STUDENT", "x", document["metadata"]["name"])  # templates
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), (path, name)
            kinds.append(document["kind"])
    assert {"DaskJob", "NetworkPolicy"} <= set(kinds), kinds


def test_dask_grading_names_only_what_exists() -> None:
    text = DASK_GRADING.read_text() + DOCKERFILE.read_text()
    named = set(re.findall(r"(?<![\w/])((?:deploy|solutions|course|tests)/[\w./-]*\w)", text))
    assert "deploy/dask/run_grading.py" in named
    for path in named:
        assert (REPO_ROOT / path).exists(), path


# --- the DaskJob: runner, scheduler, workers ------------------------------------------------------


def test_runner_is_the_only_pod_with_the_course(dask_job, run_grading) -> None:
    job = dask_job["job"]
    assert job["apiVersion"] == "kubernetes.dask.org/v1" and job["metadata"]["name"] == CLUSTER
    runner = job["spec"]["job"]["spec"]
    assert runner["restartPolicy"] == "Never" and runner["automountServiceAccountToken"] is False
    (container,) = _containers(runner)
    (mount,) = container["volumeMounts"]
    (volume,) = runner["volumes"]
    assert volume["name"] == mount["name"]
    # ... the instructor's volume of values.yaml.
    values = yaml.safe_load((DEPLOY / "kubernetes" / "values.yaml").read_text())
    assert volume["persistentVolumeClaim"]["claimName"] == "dyngraph-course"
    assert '"claimName": "dyngraph-course"' in values["hub"]["extraConfig"]["dyngraph-roles"]
    # The runner runs deploy/dask/run_grading.py, as its parser accepts it, on the mounted course.
    args = [word.replace("ASSIGNMENT", "graph_construction") for word in container["args"]]
    assert args[:2] == ["python", "deploy/dask/run_grading.py"]
    assert (REPO_ROOT / args[1]).is_file() and container["workingDir"] == "/opt/dyngraph"
    ours, extra = run_grading.split_extra(args[2:])
    parsed = run_grading.build_parser().parse_args(ours)
    assert parsed.assignment == "graph_construction" and not extra
    assert parsed.course == mount["mountPath"]
    replicas = job["spec"]["cluster"]["spec"]["worker"]["replicas"]
    assert 1 <= parsed.min_workers <= replicas
    # Scheduler and workers mount nothing.
    cluster = job["spec"]["cluster"]["spec"]
    for pod in (cluster["scheduler"]["spec"], cluster["worker"]["spec"]):
        assert "volumes" not in pod and pod["automountServiceAccountToken"] is False
        assert all("volumeMounts" not in c for c in _containers(pod))


def test_workers_can_sandbox_one_submission_each(dask_job) -> None:
    cluster = dask_job["job"]["spec"]["cluster"]["spec"]
    pod = cluster["worker"]["spec"]
    (worker,) = _containers(pod)
    args = worker["args"]
    assert args[:2] == ["dask", "worker"] and args[2] == "$(DASK_SCHEDULER_ADDRESS)"
    assert args[args.index("--nthreads") + 1] == "1"
    assert args[args.index("--nworkers") + 1] == "1"
    # bubblewrap's needs: the pod's own user namespace, an unmasked /proc, unshare() allowed.
    assert pod["hostUsers"] is False
    context = worker["securityContext"]
    assert context["procMount"] == "Unmasked" and context["runAsNonRoot"] is True
    assert context["seccompProfile"] == {"type": "Unconfined"}
    assert context["appArmorProfile"] == {"type": "Unconfined"}
    assert context["allowPrivilegeEscalation"] is False and "privileged" not in context
    # One core and room for a 3 GiB sandbox plus the worker; Guaranteed (requests == limits).
    resources = worker["resources"]
    assert resources["requests"] == resources["limits"]
    assert resources["limits"]["cpu"] == "1"
    memory = resources["limits"]["memory"]
    assert memory.endswith("Gi") and float(memory[:-2]) >= 3.5
    # The same image everywhere: the grading process refuses workers with other versions.
    runner = _containers(dask_job["job"]["spec"]["job"]["spec"])[0]
    scheduler = _containers(cluster["scheduler"]["spec"])[0]
    assert worker["image"] == runner["image"] == scheduler["image"]
    assert scheduler["args"][:2] == ["dask", "scheduler"]
    assert cluster["scheduler"]["service"]["type"] == "ClusterIP"
    port = scheduler["args"][scheduler["args"].index("--port") + 1]
    assert {p["port"] for p in cluster["scheduler"]["service"]["ports"]} == {int(port), 8787}


def test_network_policies_keep_the_scheduler_to_this_cluster(dask_job) -> None:
    policies = {
        d["metadata"]["name"]: d["spec"]
        for d in dask_job["documents"]
        if d["kind"] == "NetworkPolicy"
    }
    scheduler = policies["dyngraph-grading-scheduler"]
    assert scheduler["podSelector"]["matchLabels"] == {
        "dask.org/cluster-name": CLUSTER,
        "dask.org/component": "scheduler",
    }
    comm = [
        rule for rule in scheduler["ingress"] if {"port": 8786, "protocol": "TCP"} in rule["ports"]
    ]
    (rule,) = comm
    (source,) = rule["from"]
    expressions = {e["key"]: e["values"] for e in source["podSelector"]["matchExpressions"]}
    assert expressions == {
        "dask.org/cluster-name": [CLUSTER],
        "dask.org/component": ["worker", "job-runner"],
    }
    workers = policies["dyngraph-grading-workers"]
    assert workers["podSelector"]["matchLabels"]["dask.org/component"] == "worker"
    assert set(workers["policyTypes"]) == {"Ingress", "Egress"}
    for rule in workers["egress"]:  # this cluster's pods, or DNS only
        (target,) = rule["to"]
        labels = target.get("podSelector", {}).get("matchLabels")
        assert labels == {"dask.org/cluster-name": CLUSTER} or (
            labels == {"k8s-app": "kube-dns"} and {p["port"] for p in rule["ports"]} == {53}
        )


# --- the image ------------------------------------------------------------------------------------


def test_grader_dockerfile_holds_what_workers_need(dask_job) -> None:
    text = DOCKERFILE.read_text()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    instructions = [line.split()[0] for line in lines if line.strip() and not line.startswith("#")]
    known = {"FROM", "RUN", "COPY", "WORKDIR", "ENV", "USER", "ENTRYPOINT", "CMD", "ARG"}
    assert instructions[0] == "FROM" and set(instructions) <= known, instructions
    assert re.search(r"^FROM python:3\.11-slim", text, re.M)
    assert re.search(r"apt-get install .*\bbubblewrap\b", " ".join(lines))
    torch_pin = re.search(r"torch==([\w.+]+)", (REPO_ROOT / ".ci" / "run").read_text())
    assert torch_pin, ".ci/run pins no torch"
    assert f"https://download.pytorch.org/whl/cpu torch=={torch_pin.group(1)}" in text
    assert re.search(r'pip install .*-e "\.\[[\w,]*\bdask\b[\w,]*\]"', " ".join(lines))
    workdir = re.search(r"^WORKDIR (\S+)", text, re.M).group(1)
    assert f"PYTHONPATH={workdir}" in text
    for container in _containers(dask_job["job"]["spec"]["job"]["spec"]):
        assert container["workingDir"] == workdir
    for ignored in ("course/submitted", "course/gradebook.db", ".git"):
        assert ignored in (DOCKERFILE.parent / "grader.Dockerfile.dockerignore").read_text()


# --- the Slurm recipe -----------------------------------------------------------------------------


@pytest.mark.parametrize("script", [SLURM, RUN_GRADING], ids=lambda p: p.name)
def test_recipe_compiles_and_answers_help(script: Path) -> None:
    compile(script.read_text(), str(script), "exec")
    result = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "--min-workers" in result.stdout and "ASSIGNMENT" in result.stdout.upper()


def test_recipes_run_the_grading_command_from_the_repository(run_grading) -> None:
    command = run_grading.grading_command(
        "memory", "tcp://10.0.0.1:8786", course="/srv/course", autograde=True, extra=["--force"]
    )
    assert command[1:] == [
        "-m", "solutions", "--course", "/srv/course", "autograde", "memory",
        "--dask", "tcp://10.0.0.1:8786", "--force",
    ]  # fmt: skip
    assert (
        run_grading.REPO_ROOT == REPO_ROOT and (REPO_ROOT / "solutions" / "__main__.py").is_file()
    )
    assert run_grading.split_extra(["a", "--", "--force"]) == (["a"], ["--force"])


def test_grade_and_autograde_accept_dask(run_grading) -> None:
    from solutions.instructor.cli import build_parser

    for autograde in (False, True):
        command = run_grading.grading_command(
            "graph_construction", "tcp://10.0.0.1:8786", "/srv/course", autograde
        )
        args = build_parser().parse_args(command[3:])
        assert args.command == ("autograde" if autograde else "grade")
        assert args.dask == "tcp://10.0.0.1:8786" and str(args.course) == "/srv/course"


def test_slurm_options_give_one_thread_per_worker(slurm) -> None:
    args, extra = slurm.parse_args(
        ["memory", "--workers", "8", "--workers-per-job", "4", "--activate", "module load x", "--"]
    )
    options = slurm.cluster_options(args)
    assert options["cores"] == options["processes"] == 4 and extra == []
    assert options["memory"] == "14.00GiB" and args.min_workers == 1
    assert options["job_script_prologue"][0] == "module load x"
    assert f"cd {shlex.quote(str(REPO_ROOT))}" in options["job_script_prologue"]


def _job_script(slurm, capsys, tmp_path: Path, *more: str) -> str:
    secrets = tmp_path / "secrets"
    argv = [
        "graph_construction", "--job-script", "--scheduler-port", "0", "--secrets-dir",
        str(secrets), "--queue", "cpu", "--activate", "source /opt/dyngraph/.venv/bin/activate",
        *more,
    ]  # fmt: skip
    assert slurm.main(argv) == 0
    script = capsys.readouterr().out
    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    return script


def test_slurm_job_script(slurm, capsys, tmp_path: Path) -> None:
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed")
    pytest.importorskip("cryptography", reason="TLS certificates need cryptography")
    script = _job_script(slurm, capsys, tmp_path)
    lines = script.splitlines()
    assert lines[0].startswith("#!") and "#SBATCH -p cpu" in lines
    assert "#SBATCH --cpus-per-task=1" in lines and "#SBATCH -t 02:00:00" in lines
    prologue = lines.index("source /opt/dyngraph/.venv/bin/activate")
    worker = next(i for i, line in enumerate(lines) if "dask_worker" in line)
    assert prologue < lines.index(f"cd {shlex.quote(str(REPO_ROOT))}") < worker
    command = lines[worker]
    assert " --nthreads 1 " in command and "--nworkers" not in command
    assert " tls://" in command and "--tls-ca-file" in command and "--tls-key" in command
    assert command.startswith("python -m distributed.cli.dask_worker")
    assert (tmp_path / "secrets").stat().st_mode & 0o777 == 0o700

    script = _job_script(slurm, capsys, tmp_path, "--workers-per-job", "4", "--no-tls")
    command = next(line for line in script.splitlines() if "dask_worker" in line)
    assert "#SBATCH --cpus-per-task=4" in script and " --nworkers 4 " in command
    assert " --nthreads 1 " in command and " tcp://" in command and "--tls" not in command


def test_tls_settings_reach_the_grading_process(slurm, run_grading, tmp_path: Path) -> None:
    """What slurm.py hands the grading command (Dask configuration in its environment) lets a
    plain `Client(address)` in another process connect, and nothing else does."""
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography", reason="TLS certificates need cryptography")
    from distributed import LocalCluster
    from distributed.security import Security

    security = Security.temporary()
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
        security=security, dashboard_address=":0",
    ) as cluster:  # fmt: skip
        address = cluster.scheduler_address
        assert run_grading.wait_for_workers(address, 1, 10, security=security) == 1
        env = slurm.client_tls_env(cluster, tmp_path)
        assert all((tmp_path / name).stat().st_mode & 0o777 == 0o600 for name in
                   ("client-ca_file.pem", "client-cert.pem", "client-key.pem"))  # fmt: skip
        code = (
            "import sys; from distributed import Client\n"
            "with Client(sys.argv[1], timeout=10) as c: print(len(c.nthreads()))"
        )
        base = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
        ok = subprocess.run(
            [sys.executable, "-c", code, address],
            env={**base, **env}, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert ok.returncode == 0 and ok.stdout.strip() == "1", ok.stderr[-2000:]
        refused = subprocess.run(
            [sys.executable, "-c", code, address],
            env=base, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert refused.returncode != 0


# --- the commands the files name ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, options",
    [
        (
            "worker",
            ["--nthreads", "--nworkers", "--name", "--death-timeout", "--dashboard-address"],
        ),
        ("scheduler", ["--port", "--dashboard-address"]),
    ],
)
def test_dask_commands_exist(command: str, options: list[str], dask_job) -> None:
    pytest.importorskip("distributed")
    result = subprocess.run(
        [sys.executable, "-m", "dask", command, "--help"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for option in options:
        assert option in result.stdout, option
    # ... and the files use no other option of theirs.
    cluster = dask_job["job"]["spec"]["cluster"]["spec"]
    pod = cluster["worker" if command == "worker" else "scheduler"]["spec"]
    used = [word for word in _containers(pod)[0]["args"] if word.startswith("--")]
    assert set(used) <= set(options), used
