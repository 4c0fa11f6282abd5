# One image recipe for every askgate service. Build from the repository root:
#   docker build --build-arg SERVICE=api -t askgate-api:0.1.0 .
# SERVICE is a folder of services/ (api, web, sweeper, webhooks, text, telegram, discord,
# slack, mcp); the image holds that service's package and its dependencies only, and runs
# `askgate-$SERVICE` (arguments after the image name go to it, e.g. `--check`).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ARG SERVICE
# The uv that installs the locked environment, pinned so a rebuild resolves the same way.
ARG UV_VERSION=0.13.9
RUN test -n "${SERVICE}" || { echo "build with --build-arg SERVICE=<folder of services/>"; exit 1; }
RUN pip install --no-cache-dir "uv==${UV_VERSION}"
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11
WORKDIR /app
COPY pyproject.toml uv.lock ./
COPY shared/ shared/
COPY services/ services/
RUN test -f "services/${SERVICE}/pyproject.toml" \
    || { echo "no service ${SERVICE} in services/"; exit 1; }
# Only this service's package and what it depends on, as built wheels (not editable).
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-dev --no-editable --package "askgate-${SERVICE}" \
    && ln -s "askgate-${SERVICE}" /app/.venv/bin/askgate-service

FROM ${PYTHON_IMAGE} AS runtime
ARG SERVICE
RUN groupadd --system --gid 10001 askgate \
    && useradd --system --uid 10001 --gid askgate --no-create-home askgate
# Non-editable installs: the environment alone is the application, no source tree.
COPY --from=build /app/.venv /app/.venv
ENV PATH=/app/.venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    ASKGATE_SERVICE=${SERVICE} \
    ASKGATE_API_HOST=0.0.0.0 ASKGATE_WEB_HOST=0.0.0.0 ASKGATE_TELEGRAM_WEBHOOK_HOST=0.0.0.0 \
    ASKGATE_SLACK_HOST=0.0.0.0 ASKGATE_DISCORD_HOST=0.0.0.0
WORKDIR /app
USER 10001:10001
ENTRYPOINT ["/app/.venv/bin/askgate-service"]
