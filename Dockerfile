# Tollgate in a container: a static binary on a distroless base, running as
# a non-root user, its embedded database on the /data volume.
#
#   docker build --build-arg VERSION=v$(cat VERSION) -t tollgate .
#   docker run -p 8080:8080 -v tollgate-data:/data tollgate
#
# The first start prints the first admin's email, password and API key to
# the container's output (docker logs). Set DATABASE_URL to use PostgreSQL.

FROM golang:1.27.3-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/tollgate ./cmd/tollgate \
    && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tollgate /usr/local/bin/tollgate
# The volume's mount point belongs to the image's non-root user (65532), so
# a new named volume starts writable by it.
COPY --from=build --chown=65532:65532 /out/data /data
ENV TOLLGATE_ADDR=0.0.0.0:8080 \
    TOLLGATE_DATA=/data
VOLUME /data
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/tollgate"]
CMD ["serve"]
