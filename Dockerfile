# A pptarena worker image: LibreOffice Impress, the fonts the decks expect, Xvfb and xdotool (GUI
# agents), and pptarena with Ray. The same image serves as Ray head and worker node:
#
#   docker build -t pptarena-worker .
#   docker run --rm --shm-size=2g --network=host pptarena-worker ray start --head --block --num-cpus=2
#   docker run --rm --shm-size=2g --network=host pptarena-worker \
#       ray start --address=HEAD_IP:6379 --block --num-cpus=2 --resources='{"desktop": 2}'
#
# See docs/distributed.md (KubeRay uses this image for its head and worker groups).
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/pptarena/venv/bin:$PATH

# the system packages of scripts/setup.sh (python3-uno drives LibreOffice from /usr/bin/python3)
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libreoffice-impress libreoffice-core python3-uno \
      fonts-crosextra-carlito fonts-crosextra-caladea fonts-liberation fonts-liberation2 fonts-dejavu-core fonts-noto-cjk \
      xvfb xdotool x11-utils \
      python3 python3-venv ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*

# an unprivileged user: agents and rubric code never run as root
RUN useradd --create-home --uid 1000 arena
WORKDIR /opt/pptarena
COPY pyproject.toml README.md ./
COPY core ./core
COPY plugins ./plugins
RUN python3 -m venv /opt/pptarena/venv \
 && /opt/pptarena/venv/bin/pip install --upgrade pip \
 && /opt/pptarena/venv/bin/pip install ".[ray,openai,anthropic]" \
 && chown -R arena:arena /opt/pptarena

USER arena
ENV HOME=/home/arena PPTARENA_CACHE=/home/arena/.cache/pptarena
WORKDIR /home/arena
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["arena", "--help"]
