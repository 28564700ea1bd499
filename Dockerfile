# raykeeper's image: the webhook (`raykeeper webhook ...`) and the controller (`raykeeper controller ...`)
# are the same image with different args (see manifests/base). It runs the package `npm pack` makes (the
# TypeScript compiled to JavaScript by its prepack script), the same files a CI job installs, on Node 22
# with the production dependencies of package-lock.json.
#   docker build -t raykeeper:0.1.0 .
FROM node:22-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY kube ./kube
COPY src ./src
COPY certs ./certs
COPY webhook ./webhook
COPY controller ./controller
COPY manifests ./manifests
RUN npm pack --silent && mkdir /package && tar -xzf raykeeper-*.tgz -C /package --strip-components=1

FROM node:22-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only (the `node` devDependency is not needed: the base image is Node 22).
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /package/ ./
RUN ln -s /app/bin/raykeeper.js /usr/local/bin/raykeeper

# The image's `node` user (uid/gid 1000), numeric so runAsNonRoot can be verified by the kubelet.
USER 1000:1000

# The webhook's HTTPS port (--port, default 9443) and the controller's /healthz, /readyz, /metrics
# (--health-port, default 8080): the defaults, which the manifests and the chart also use.
EXPOSE 9443 8080

ENTRYPOINT ["raykeeper"]
CMD ["--help"]
