# The goodput image: one statically linked binary, the CA certificates
# https targets are verified with, and nothing else (no shell, no libc, no
# package manager). Its entrypoint is goodput; `goodput k8s` prints the
# manifests that run it.
#
#   docker build -t goodput .
#   docker run --rm goodput run --url http://HOST:8000 --request-rate 10
#
# BuildKit (the default builder since Docker 23; podman and buildah too)
# keeps cargo's registry and target directory between builds.

# Any Rust from 1.88 (the workspace's rust-version) on builds it; pin one
# for a reproducible image, e.g. --build-arg RUST_VERSION=1.95.
ARG RUST_VERSION=1
FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# Static glibc (crt-static), not musl: nothing to install, and the same
# libc the tests run on. --target is named so that RUSTFLAGS reach goodput
# and not the build scripts and proc-macros. Static glibc (bookworm's 2.36)
# resolves names from /etc/hosts and DNS with no shared library present
# (tested in an empty chroot: localhost, a name only /etc/hosts holds, a
# DNS name), which is what pod and Service names need. getrandom is told
# to call getrandom(2): its default looks the function up with dlsym,
# which a static binary cannot, and falls back to /dev/random and
# /dev/urandom. No debug info; the symbols stay, for backtraces.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    target="$(uname -m)-unknown-linux-gnu" \
 && RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    cargo build --release --locked -p goodput --target "$target" \
 && cp "target/$target/release/goodput" /goodput \
 && /goodput --version \
 && printf 'hosts: files dns\n' > /nsswitch.conf

FROM scratch
# rustls-native-certs reads the system's roots from this file.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# /etc/hosts first, then DNS: the pod's own names are in its /etc/hosts.
COPY --from=build /nsswitch.conf /etc/nsswitch.conf
COPY --from=build /goodput /goodput
# 65532: the "nonroot" user of distroless images; goodput k8s's pods run as it.
USER 65532:65532
ENTRYPOINT ["/goodput"]
