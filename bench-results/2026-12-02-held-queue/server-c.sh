# Sourced by probe.sh and calibrate.sh: start_c OUT writes configuration C's
# model (a random-weight 4 x 128 Llama) into OUT/model, starts a one-thread
# 2-slot llama-server on it pinned to core 1 (run the caller's client on
# core 0), and sets $url; the server is killed when the script exits.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$here/bench-results/2026-11-28-slow-llama/server.sh"
start_c() {
  local out=$1
  mkdir -p "$out"
  python3 "$here/crates/goodput/tests/llama/make_model.py" "$out/model" --layers 4 --embd 128 >/dev/null
  start_server "$server" "$out/model/tiny.gguf" 2 "$out/server.log"
  taskset -a -p -c 1 "$server_pid" >/dev/null
}
