# raykeeper's image: the webhook (`raykeeper webhook ...`) and the controller (`raykeeper controller ...`)
# are the same image with different args (see manifests/base). TypeScript runs directly on Node 22's
# type stripping: there is no build step, only production dependencies (and a cache of the stripped
# sources, below, that Node falls back from whenever a source does not match it).
#   docker build -t raykeeper:0.1.0 .
FROM node:22-slim

ENV NODE_ENV=production
WORKDIR /app

COPY package.json package-lock.json ./
# Production dependencies only (the `node` devDependency is not needed: the base image is Node 22).
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force

COPY bin ./bin
COPY kube ./kube
COPY src ./src
COPY certs ./certs
COPY webhook ./webhook
COPY controller ./controller
# The stripped-TypeScript cache (bin/strip-cache.js): modules load without swc, about a third less
# start-up CPU for every process (the cleanup Job's most of all). Keyed by source and Node version.
RUN node bin/strip-cache.js /app/.strip-cache bin kube src certs webhook controller
ENV RAYKEEPER_STRIP_CACHE=/app/.strip-cache
RUN chmod 0755 bin/raykeeper.js && ln -s /app/bin/raykeeper.js /usr/local/bin/raykeeper

# The image's `node` user (uid/gid 1000), numeric so runAsNonRoot can be verified by the kubelet.
USER 1000:1000

# The webhook's HTTPS port (--port, default 9443) and the controller's /healthz, /readyz, /metrics
# (--health-port, default 8080): the defaults, which the manifests and the chart also use.
EXPOSE 9443 8080

ENTRYPOINT ["raykeeper"]
CMD ["--help"]
