# syntax=docker/dockerfile:1
# The grading image: the repository (solutions/ included) with Python 3.11, torch 2.13.0 (CPU)
# and bubblewrap. It runs the grading process, the Dask scheduler and the Dask workers of
# deploy/kubernetes/dask-grading.yaml. Never give it to students: it holds the reference
# solutions. Build from the repository root:
#
#   docker build -f deploy/kubernetes/grader.Dockerfile \
#     -t registry.example.org/dyngraph/grader:0.1.0 .
#
# (grader.Dockerfile.dockerignore, beside this file, keeps the course's student data and local
# builds out.) One image for all: the grading process refuses a worker whose Python or torch
# differs from its own.
FROM python:3.11-slim-bookworm

# bubblewrap: the sandbox of every submission; util-linux: setpriv (grading as root drops to
# nobody with it); graphviz: `dot` for minitorch.viz and torchviz in notebooks; tini: PID 1,
# reaping what a run leaves behind.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap graphviz tini util-linux \
    && rm -rf /var/lib/apt/lists/*

# torch first, the CPU wheel from PyTorch's index (PyPI's Linux wheel pulls CUDA, gigabytes),
# pinned as the tests pin it; the project's own `torch>=2.1,<3` is then already met.
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

WORKDIR /opt/dyngraph
COPY . /opt/dyngraph
# course: nbgrader, nbclient's kernel and what notebooks import; dask: dask and distributed.
RUN pip install --no-cache-dir -e ".[course,dask]" \
    && python -c "import distributed, minitorch, nbgrader, torch; print(torch.__version__)"

# `python -m solutions` and the Dask tasks import `solutions` from this checkout (the wheel
# holds only minitorch); `dask worker` is a console script, so the checkout goes on the path.
ENV PYTHONPATH=/opt/dyngraph \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# Grading without root: bubblewrap then makes a user namespace of its own (the pod's
# securityContext says what that needs). The grading process may run under another uid (the
# instructor's, dask-grading.yaml); the checkout stays root's, read-only to both.
RUN useradd --uid 1000 --user-group --create-home --shell /usr/sbin/nologin grader
USER 1000

ENTRYPOINT ["tini", "--"]
CMD ["python", "-m", "solutions", "--help"]
